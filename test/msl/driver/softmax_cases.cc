// softmax over the last axis (shaders/softmax.metal) against the cpu backend's
// (native/cpu/softmax.cc, the sum in double): rows 1, 3, 37 of 1 to 4099 columns and vocabulary
// rows of 128256, float32/float16/bfloat16 x, and rows at the edges: -inf among finite values
// (exactly 0), a row of only -inf, a +inf, a NaN (NaN rows), +-1e30, zeros and -0. y within
// 1e-5 (1 + |ref|) plus one unit in the last place for 16-bit y (the kernel's float32 sum of up
// to 128256 terms). Also plan/softmax.
#include <cmath>
#include <limits>

#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan/softmax.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;
using namespace model;

constexpr double kTolerance = 1e-5;

// Row r of an edge case: 0 ordinary, 1 a quarter -inf, 2 all -inf, 3 one +inf, 4 one NaN,
// 5 +-1e30 among ordinary values, 6 zeros and -0, 7 the first half -inf (a thread's first values
// are -inf and later ones finite: -inf must add nothing before the thread's max is known).
std::vector<float> softmax_data(int64_t rows, int64_t cols, uint64_t seed, bool edges) {
  std::vector<float> v = normal_data(rows * cols, seed, 4.0f);
  if (!edges) return v;
  const float inf = std::numeric_limits<float>::infinity();
  for (int64_t r = 0; r < rows; ++r) {
    float* row = v.data() + r * cols;
    for (int64_t i = 0; i < cols; ++i) {
      switch (r % 8) {
        case 1: if (i % 4 == 1) row[i] = -inf; break;
        case 2: row[i] = -inf; break;
        case 3: if (i == cols / 2) row[i] = inf; break;
        case 4: if (i == cols / 3) row[i] = std::numeric_limits<float>::quiet_NaN(); break;
        case 5: if (i % 5 == 2) row[i] = (i % 2) ? 1e30f : -1e30f; break;
        case 6: row[i] = (i & 1) ? -0.0f : 0.0f; break;
        case 7: if (i < cols / 2) row[i] = -inf; break;
        default: break;
      }
    }
  }
  return v;
}

// max_threads: the pipeline limit the plan is made for (1024: none below the kernel's own).
CaseResult run_case(DType dt, int64_t rows, int64_t cols, bool edges, uint32_t max_threads, const std::string& name,
                    const std::string& variant) {
  const mto::Tensor x = tensor_of(softmax_data(rows, cols, seed_of(name), edges), {rows, cols}, dt);
  const mto::RowsParams p = mto::check_softmax(x);
  mto::Tensor out = empty_tensor({rows, cols}, p.out_dtype);
  mto::cpu::ThreadPool pool(1);
  mto::cpu::softmax(pool, x, p, out);
  const std::vector<float> ref = floats_of(out);
  const mto::plan::Dispatch plan = mto::plan::plan_softmax(p, dt, p.out_dtype, mto::Tier::Simdgroup, max_threads);
  return run_plan_case("softmax", plan, variant, {{Arg::X, bytes_of(x)}}, {{Arg::Y, out.bytes()}},
                       [&](const std::map<Arg, Bytes>& o) {
                         return compare_outputs(o.at(Arg::Y), p.out_dtype, ref, kTolerance, cols, "y");
                       });
}

CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Tier;
  mto::RowsParams p;
  p.rows = 2;
  p.cols = 128256;
  const DType f32 = DType::Float32;
  std::vector<std::pair<std::string, std::string>> checks = {
      {"int32 x", expect_error(mto::code::DType, [&] { plan::plan_softmax(p, DType::Int32, DType::Int32, Tier::Simdgroup); })},
      {"y of another dtype", expect_error(mto::code::DType, [&] { plan::plan_softmax(p, f32, DType::BFloat16, Tier::Simdgroup); })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] { plan::plan_softmax(p, f32, f32, Tier::Cpu); })},
  };
  const plan::Dispatch d = plan::plan_softmax(p, DType::Float16, DType::Float16, Tier::TensorOpsMx);
  checks.push_back({"a vocabulary row", d.kernel == "softmax_rows_f16" && d.threads_per_threadgroup[0] == 1024 &&
                                                d.threadgroups[0] == 2
                                            ? ""
                                            : "got " + d.kernel});
  // A pipeline that allows fewer threads than the kernel's 1024 (maxTotalThreadsPerThreadgroup on
  // a GPU where the kernel needs more registers): the plan stays within it, in whole SIMD-groups.
  for (auto [limit, threads] : {std::pair<uint32_t, uint32_t>{1024, 1024}, {4096, 1024}, {768, 768}, {790, 768},
                                {32, 32}}) {
    const plan::Dispatch l = plan::plan_softmax(p, f32, f32, Tier::Simdgroup, limit);
    checks.push_back({"a pipeline limit of " + std::to_string(limit),
                      l.threads_per_threadgroup[0] == threads
                          ? ""
                          : "planned " + std::to_string(l.threads_per_threadgroup[0]) + " threads"});
  }
  mto::RowsParams narrow = p;
  narrow.cols = 33;
  checks.push_back({"a short row under a pipeline limit of 96",
                    plan::plan_softmax(narrow, f32, f32, Tier::Simdgroup, 96).threads_per_threadgroup[0] == 32 ? ""
                                                                                                             : "not 32 threads"});
  checks.push_back({"a pipeline limit below one SIMD-group",
                    expect_error(mto::code::Backend, [&] { plan::plan_softmax(p, f32, f32, Tier::Simdgroup, 31); })});
  return rule_checks(checks);
}

}  // namespace

std::vector<Case> softmax_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/softmax", [](const std::string&) { return plan_rules(); }});
  auto add = [&](DType dt, int64_t rows, int64_t cols, bool edges, uint32_t max_threads = 1024) {
    const std::string name = std::string("softmax/") + tag(dt) + "/R" + std::to_string(rows) + ".C" + std::to_string(cols) +
                             (edges ? "/edges" : "") + (max_threads < 1024 ? "/limit" + std::to_string(max_threads) : "");
    cases.push_back({name, [=](const std::string& v) { return run_case(dt, rows, cols, edges, max_threads, name, v); }});
  };
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {3, 7}, {37, 33}, {37, 1000}, {3, 4099}}) {
      add(dt, rows, cols, false);
    }
    add(dt, 8, 33, true);
    add(dt, 8, 1000, true);
  }
  add(DType::Float32, 2, 128256, false);
  add(DType::BFloat16, 1, 128256, false);
  add(DType::Float32, 8, 4099, true);
  // Plans shrunk to a pipeline's lower limit: 24 and 3 SIMD-groups over rows longer than them.
  add(DType::Float32, 8, 4099, true, 790);
  add(DType::BFloat16, 3, 1000, false, 96);
  return cases;
}

}  // namespace mtoh_driver
