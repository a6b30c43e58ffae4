// execute_plan (plan_runner.h).
#include "plan_runner.h"

namespace mtoh_driver {

using mto::plan::Arg;

PlanRun execute_plan(const mto::plan::Dispatch& plan, const std::string& variant,
                     const std::map<Arg, Bytes>& inputs, const std::map<Arg, size_t>& output_sizes,
                     const mtoh::RunOptions& options, unsigned char poison) {
  PlanRun run;
  const mtoh::KernelInfo* kernel = mtoh::find_kernel(plan.library, variant, plan.kernel);
  if (!kernel) {
    run.result = {false, "binding", "no kernel '" + plan.kernel + "' in shaders/" + plan.library +
                                        ".metal" + (variant.empty() ? "" : " (variant " + variant + ")")};
    return run;
  }
  if (!plan.constants.empty()) {
    run.result = {false, "binding", "the plan specialises " + plan.kernel +
                                        " with function constants, which the harness does not support yet"};
    return run;
  }
  std::vector<mtoh::HostBuffer> buffers;
  for (const auto& slot : plan.buffers) {
    mtoh::HostBuffer b;
    b.index = int(slot.index);
    b.name = mto::plan::arg_name(slot.arg);
    if (slot.arg == Arg::Params) {
      b.data.assign(plan.params.begin(), plan.params.end());
    } else if (auto in = inputs.find(slot.arg); in != inputs.end()) {
      b.data = in->second;
    } else if (auto out = output_sizes.find(slot.arg); out != output_sizes.end()) {
      b.data.assign(out->second, poison);
    } else if (slot.arg != Arg::Unused) {
      run.result = {false, "binding", std::string("the test supplies no data for plan slot ") +
                                          std::to_string(slot.index) + " (" + b.name + ")"};
      return run;
    }
    buffers.push_back(std::move(b));
  }
  // Tensor arguments: a handle over the planes the plan names, with the plan's descriptor (what
  // the Metal host binds as one MTLTensor through the argument table).
  std::vector<mtoh::HostTensor> tensors;
  for (const auto& slot : plan.tensors) {
    mtoh::HostTensor t;
    t.index = int(slot.index);
    t.name = mto::plan::arg_name(slot.arg);
    auto data = inputs.find(slot.data);
    auto scales = inputs.find(slot.scales);
    if (data == inputs.end() || scales == inputs.end()) {
      run.result = {false, "binding", std::string("the test supplies no planes for tensor slot ") +
                                          std::to_string(slot.index) + " (" + t.name + ")"};
      return run;
    }
    t.data = data->second;
    t.scales = scales->second;
    t.data_type = slot.data_type;
    t.rank = 2;
    t.scale_type = slot.scale_type;
    for (int i = 0; i < 2; ++i) {
      t.dims[i] = slot.dims[i];
      t.strides[i] = slot.strides[i];
      t.block[i] = slot.block[i];
    }
    tensors.push_back(std::move(t));
  }
  mtoh::Geometry g;
  for (int i = 0; i < 3; ++i) {
    g.threadgroups[i] = plan.threadgroups[i];
    g.threads[i] = plan.threads_per_threadgroup[i];
  }
  run.result = mtoh::run_kernel(*kernel, g, buffers, tensors, {}, options);
  for (size_t i = 0; i < plan.buffers.size(); ++i)
    if (output_sizes.count(plan.buffers[i].arg)) run.outputs[plan.buffers[i].arg] = std::move(buffers[i].data);
  return run;
}

std::string dims_json(const uint32_t v[3]) {
  return "[" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + "]";
}

}  // namespace mtoh_driver
