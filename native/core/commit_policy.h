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

}  // namespace mto
