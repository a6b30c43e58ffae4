// Per-library fallback (library_fallback.h).
#include "library_fallback.h"

#include <algorithm>

namespace mto {

void UnusableLibraries::mark(const std::string& library, const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  for (const LibraryFallback& f : list_) {
    if (f.library == library) return;
  }
  list_.push_back(LibraryFallback{library, reason});
}

bool UnusableLibraries::contains(const std::string& library) const {
  std::lock_guard<std::mutex> lock(mu_);
  return std::any_of(list_.begin(), list_.end(), [&](const LibraryFallback& f) { return f.library == library; });
}

std::vector<LibraryFallback> UnusableLibraries::list() const {
  std::lock_guard<std::mutex> lock(mu_);
  return list_;
}

Tier tier_below(Tier t) {
  switch (t) {
    case Tier::TensorOpsMx: return Tier::TensorOps;
    case Tier::TensorOps: return Tier::Simdgroup;
    case Tier::Simdgroup:
    case Tier::Cpu: break;
  }
  return Tier::Cpu;
}

}  // namespace mto
