// Executes a dispatch plan (native/core/dispatch_plan.h) in the harness exactly as the Metal host
// encodes it: the plan's kernel instance from the plan's library, the plan's grid and threadgroup
// size, and at each buffer index what the plan says (its params bytes, an operand, an output, or
// for an Unused slot an empty buffer, so any read of it is reported; for a tensor slot a tensor
// handle over the planes it names, with its descriptor).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/dispatch_plan.h"
#include "launch.h"
#include "launch_tensors.h"

namespace mtoh_driver {

using Bytes = std::vector<unsigned char>;

struct PlanRun {
  mtoh::RunResult result;
  std::map<mto::plan::Arg, Bytes> outputs;
};

// inputs: the operands the plan reads; output_sizes: bytes of each output, filled with `poison`
// before the launch so elements the kernel fails to write show up in the comparison.
PlanRun execute_plan(const mto::plan::Dispatch& plan, const std::string& variant,
                     const std::map<mto::plan::Arg, Bytes>& inputs,
                     const std::map<mto::plan::Arg, size_t>& output_sizes,
                     const mtoh::RunOptions& options, unsigned char poison);

// "[a, b, c]"
std::string dims_json(const uint32_t v[3]);

}  // namespace mtoh_driver
