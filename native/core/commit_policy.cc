#include "commit_policy.h"

#include <cstdlib>

#include "error.h"

namespace mto {
namespace {

// A positive integer from the environment, or `fallback` when unset.
long long env_count(const char* name, const char* value, long long fallback, long long max) {
  if (!value || !*value) return fallback;
  char* end = nullptr;
  const long long n = std::strtoll(value, &end, 10);
  if (*end != '\0' || n < 1 || n > max) {
    throw Error(code::Arg, std::string(name) + " must be an integer from 1 to " + std::to_string(max) +
                               "; got '" + value + "'");
  }
  return n;
}

}  // namespace

CommitPolicy commit_policy(const std::string& architecture, const char* env_ops, const char* env_mb) {
  CommitPolicy p;  // base and Pro chips ('g'), and anything unknown: 40 ops, 40 MiB
  const char cls = architecture.empty() ? '\0' : architecture.back();
  if (cls == 'p') {
    p.max_ops = 20;
  } else if (cls == 's' || cls == 'd') {
    p.max_ops = 50;
    p.max_bytes = size_t(50) << 20;
  }
  p.max_ops = int(env_count("METAL_TENSOROPS_COMMIT_OPS", env_ops, p.max_ops, 100000));
  p.max_bytes = size_t(env_count("METAL_TENSOROPS_COMMIT_MB", env_mb, (long long)(p.max_bytes >> 20), 1 << 20)) << 20;
  return p;
}

}  // namespace mto
