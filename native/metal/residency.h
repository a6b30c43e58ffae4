// What must be resident for the Metal 4 path (batch_encoder.h): Metal 4 command buffers do not
// make the resources they use resident; an MTLResidencySet does (MTLResidencySet.h: additions
// and removals take effect at its next commit). The tracker collects the changes from any thread
// (the pool makes and frees buffers on whichever thread releases a tensor); the Metal 4 encoder
// applies them in one batch before it commits a command buffer. Long-lived objects (weights,
// KV caches, the scale-plane MTLTensors) are added once, when made; pooled buffers stay
// resident while pooled and are removed only when the pool frees them. Plain ids: no macOS 15+
// call is made here, so the pool can feed it on every OS (on the Metal 3 path nothing drains it
// and it stays empty: `enabled` is false).
// Objective-C++ only: include from native/metal/*.mm.
#pragma once
#import <Metal/Metal.h>

#include <mutex>
#include <vector>

namespace mto::metal {

class ResidencyTracker {
 public:
  // Whether anyone applies the changes; off, add/remove keep nothing.
  void enable() {
    std::lock_guard<std::mutex> lock(mu_);
    enabled_ = true;
  }
  // `allocation` is an id<MTLAllocation> (an MTLBuffer or MTLTensor).
  void add(id allocation) { change(allocation, true); }
  void remove(id allocation) { change(allocation, false); }
  // Hands over the pending changes, oldest first, and forgets them.
  struct Change {
    id allocation;
    bool add;
  };
  std::vector<Change> take() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<Change> out;
    out.swap(pending_);
    return out;
  }

 private:
  void change(id allocation, bool add) {
    if (allocation == nil) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (enabled_) pending_.push_back(Change{allocation, add});
  }
  std::mutex mu_;
  bool enabled_ = false;
  std::vector<Change> pending_;
};

}  // namespace mto::metal
