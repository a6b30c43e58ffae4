// Test cases of the MSL suite: each builds a dispatch plan for an op, runs it in the harness and
// compares the outputs with the cpu backend.
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "plan_runner.h"

namespace mtoh_driver {

// Outcome of comparing a run's outputs with the reference.
struct Comparison {
  bool ok = true;
  int64_t mismatches = 0;
  double max_abs_err = 0;
  double worst_ratio = 0;  // max |got - ref| / tolerance (<= 1 passes); 0 for exact comparisons
  std::string first_mismatch;
};
// Compares outputs of `dtype` (float32, float16 or bfloat16 elements) with the cpu backend's
// float32 result `ref`, rounded to `dtype` as the cpu backend stores such an output (to nearest
// even, once): |got - rounded ref| <= tolerance * (1 + |rounded ref|), plus for float16/bfloat16
// one unit in the last place at the larger of the two magnitudes (two float32 results within the
// tolerance may round to neighbouring values); NaN matching NaN. The first mismatch is named as
// `what`[row, column] of a matrix `row_width` wide. `slack`, where given, adds an absolute amount
// per element (sums whose terms are far larger than the result: see linear_cases.cc).
Comparison compare_outputs(const Bytes& got, mto::DType dtype, const std::vector<float>& ref, double tolerance,
                           int64_t row_width, const char* what, const std::vector<double>* slack = nullptr);

using Compare = std::function<Comparison(const std::map<mto::plan::Arg, Bytes>& outputs)>;

struct CaseResult {
  std::string name, op, kernel, grid, threads;
  bool ok = false;
  std::string error_kind;  // harness kind, "mismatch", "nondeterministic" or "plan"
  std::string message;
  Comparison compare;
  double ms = 0;
  std::vector<std::string> libraries;  // whose kernels the case ran (launch.h take_libraries_used)
};

struct Case {
  std::string name;  // "quantize/mxfp4/f32/3x96", "linear/affine4.g64/M33/N37/K96/bias"
  std::function<CaseResult(const std::string& variant)> run;
};

// The two runs of every case: guarded regions end-aligned and threads in order, then
// start-aligned and threads in reverse, with different poisons. Output bytes 0xFF are NaN as
// float32, float16 and bfloat16; 0x7B bytes a large finite value in each (1.3e36, 61280, 1.3e36),
// so an element a kernel never writes cannot match a reference under both. Fresh threadgroup
// memory: NaN, then 0x7F bytes (3.4e38 as float32).
struct PlanPass {
  bool align_end, reverse;
  unsigned char output_poison, threadgroup_poison;
  const char* name;  // appended to failure messages
};
extern const PlanPass kPlanPasses[2];

// Runs `plan` in both kPlanPasses and compares both runs with the reference and with each other
// (a kernel that depends on scheduling, or reads memory it never wrote, differs).
CaseResult run_plan_case(const std::string& op, const mto::plan::Dispatch& plan,
                         const std::string& variant, const std::map<mto::plan::Arg, Bytes>& inputs,
                         const std::map<mto::plan::Arg, size_t>& output_sizes, const Compare& compare);

// A case that passes when the harness reports `kind` (a barrier in divergent code, an
// out-of-bounds access, a TensorOps constraint...) in either of the two passes of run_plan_case.
Case catches_misuse(const std::string& kind, const mto::plan::Dispatch& plan,
                    std::map<mto::plan::Arg, Bytes> inputs, std::map<mto::plan::Arg, size_t> outputs);

template <class T>
Bytes to_bytes(const std::vector<T>& v) {
  Bytes b(v.size() * sizeof(T));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<Case> quantize_cases();
std::vector<Case> linear_cases();
std::vector<Case> table_cases();     // shader-side format traits against native/core/formats.cc
std::vector<Case> selftest_cases();  // the harness itself (test/msl/selftest/selftest.metal)
std::vector<Case> plan_cases();      // what the dispatch plans refuse
std::vector<Case> tensorops_cases(); // the TensorOps shim (test/msl/selftest/tensorops_selftest.metal)
std::vector<Case> tensor_handle_cases();  // host-bound tensor arguments (tensor_handle_selftest.metal)
std::vector<Case> attention_cases(); // attention kernels (attention_cases.cc), and plan/attention
std::vector<Case> attention_tensorops_cases(); // the tensorops tier's attention (attention_tensorops_cases.cc)
std::vector<Case> attention_tensorops_mx_cases(); // the tensorops-mx tier's (attention_tensorops_cases.cc)
std::vector<Case> matmul_cases();    // dense matmul kernels (matmul_cases.cc), and plan/matmul
std::vector<Case> linear_mx_cases(); // linear on the tensorops-mx tier (linear_mx_cases.cc)
std::vector<Case> probe_cases();     // the tier probes of native/metal/probe_sources.h (probe_cases.cc)
// The model ops (core/ops.h), each with its plan/... rules case.
std::vector<Case> elementwise_cases();  // elementwise_cases.cc
std::vector<Case> norm_cases();         // norm_cases.cc
std::vector<Case> rope_cases();         // rope_cases.cc
std::vector<Case> softmax_cases();      // softmax_cases.cc
std::vector<Case> layout_cases();       // layout_cases.cc: transpose, slice, concat, write
// The model ops' kernels against the cpu backend.
std::vector<Case> pick_cases();            // argmax, topK, sample (pick_cases.cc), and plan/pick
std::vector<Case> embedding_cases();       // embedding (embedding_cases.cc)
std::vector<Case> grouped_linear_cases();  // groupedLinear (grouped_linear_cases.cc)
std::vector<Case> group_rows_cases();      // groupRows (group_rows_cases.cc), and plan/group-rows

// One linear case (linear_cases.cc): x of dtype `x`, w quantized to f with `block`, y of dtype `y`
// (linear's outDtype), the plan of `tier`, y against the cpu backend's y of that dtype
// (compare_outputs: within tolerance * (1 + |ref|), plus one unit in the last place for
// float16/bfloat16 y).
CaseResult run_linear_case(mto::Format f, int block, mto::DType x, mto::DType y, int64_t M, int64_t N, int64_t K,
                           bool bias, const std::string& name, const std::string& variant, mto::Tier tier,
                           double tolerance);
// prefix + format[.g<group>] + (/f16, /bf16: x; nothing for float32) + (/of16, /obf16: y; nothing
// for float32) + /M../N../K..[/bias]
std::string linear_case_name(const std::string& prefix, mto::Format f, int block, mto::DType x, mto::DType y,
                             int64_t M, int64_t N, int64_t K, bool bias);

std::string to_json(const CaseResult& r);

}  // namespace mtoh_driver
