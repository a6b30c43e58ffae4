// When the metal backend commits the command buffer it is encoding into, besides the end of a JS
// turn and any wait (docs/design/STREAM.md, section 3): after `max_ops` ops, or once the ops in it
// bound `max_bytes` of buffers. Small batches leave the GPU idle between command buffers; large
// ones hold results back and keep more memory in flight. Defaults by GPU class, as MLX sets them
// (mlx/backend/metal/device.cpp: the last letter of the architecture name, "applegpu_g15s": p for
// phones and tablets, g for base and Pro chips, s for Max, d for Ultra); MLX found the count
// matters (ml-explore/mlx#998: 50 -> 80 ops a buffer gave 12-17% more tokens/s), so both are
// tunable: METAL_TENSOROPS_COMMIT_OPS, METAL_TENSOROPS_COMMIT_MB. Plain C++: tested on Linux.
#pragma once
#include <cstddef>
#include <string>

namespace mto {

struct CommitPolicy {
  int max_ops = 40;
  size_t max_bytes = size_t(40) << 20;
};

// The policy for a GPU of `architecture` (Capabilities::architecture), with the environment's
// overrides (null: unset). Throws Error(E_ARG) for an override that is not a positive integer.
CommitPolicy commit_policy(const std::string& architecture, const char* env_ops, const char* env_mb);

// The open batch's count against a CommitPolicy: the one rule for committing a command buffer
// mid-turn, shared by the metal CommandStream (native/metal/encode.h) and the asynchronous test
// backend that mirrors it on Linux (native/addon/async_test_backend.h). The encoder calls bind()
// for each buffer an op binds, op_encoded() once the op is in the batch (true: commit it now),
// and committed() when the batch is committed for any reason (the turn's end, a read too), which
// starts the count again. The op that reaches the budget is the batch's last: ops after it go
// into the next batch, in order.
class BatchBudget {
 public:
  explicit BatchBudget(CommitPolicy policy = CommitPolicy{}) : policy_(policy) {}
  void bind(size_t bytes) { bytes_ += bytes; }
  bool op_encoded() { return ++ops_ >= policy_.max_ops || bytes_ >= policy_.max_bytes; }
  void committed() {
    ops_ = 0;
    bytes_ = 0;
  }
  const CommitPolicy& policy() const { return policy_; }
  int ops() const { return ops_; }
  size_t bytes() const { return bytes_; }

 private:
  CommitPolicy policy_;
  int ops_ = 0;
  size_t bytes_ = 0;
};

}  // namespace mto
