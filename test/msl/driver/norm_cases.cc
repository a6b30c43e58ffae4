// rmsNorm and layerNorm (shaders/norm.metal) against the cpu backend's (native/cpu/norm.cc, sums
// in double): rows 1, 3, 37 of 1 to 4099 columns (one SIMD-group to 1024 threads a row, rows
// longer than the threads), float32/float16/bfloat16 x, with and without weight and bias, weight
// and bias of other dtypes than x; and rows at the edges: 1e30 and 1e-30 magnitudes (squares
// that leave float32's range), eps = 0, zeros and -0, an inf, a NaN, the smallest subnormals, values near float32's largest. y within 1e-5 (1 + |ref|)
// plus one unit in the last place for 16-bit y (the kernel sums in float32: ~log2(cols) roundings
// of relative 2^-24 in the statistics). Also plan/norm.
#include <cmath>
#include <limits>
#include <optional>

#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan/norm.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;
using namespace model;

constexpr double kTolerance = 1e-5;

struct NormCase {
  bool layer;
  DType x;
  std::optional<DType> weight, bias;
  int64_t rows, cols;
  bool edges = false;  // rows cycle through the edge kinds below
  double eps = 1e-5;
  uint32_t max_threads = 1024;  // the pipeline limit the plan is made for
  bool subnormal = false;  // rows of the smallest subnormals (below); float32 x only
  bool huge = false;       // rows near float32's largest values (below); float32 x only
};

// Row r of an edge case: 0 ordinary, 1 magnitudes ~1e30, 2 ~1e-30, 3 zeros and -0, 4 one +inf,
// 5 one NaN, 6 ~1e-30 again (with eps = 0 the scale is 1e30), 7 ordinary values and one ~1e30
// (the row's largest magnitude, not its smallest, decides the prescale), 8 zeros and one ~1e-30.
std::vector<float> norm_data(const NormCase& c, uint64_t seed) {
  std::vector<float> v = normal_data(c.rows * c.cols, seed, 2.0f);
  if (c.subnormal) {
    // Rows whose largest magnitude is the smallest subnormal, 2^-149 (float bits 1: the lowest
    // magnitude norm_prescale scales; unscaled, its square underflows to 0): row r % 3 = 0 zeros
    // and one 2^-149, 1 alternating +-2^-149, 2 zeros, one -2^-149 and one 2^-148.
    const float tiny = std::numeric_limits<float>::denorm_min();
    for (int64_t r = 0; r < c.rows; ++r) {
      float* row = v.data() + r * c.cols;
      for (int64_t i = 0; i < c.cols; ++i) row[i] = r % 3 == 1 ? ((i & 1) ? -tiny : tiny) : 0.0f;
      if (r % 3 == 0) row[c.cols / 2] = tiny;
      if (r % 3 == 2) {
        row[0] = -tiny;
        row[c.cols - 1] = 2 * tiny;
      }
    }
    return v;
  }
  if (c.huge) {
    // Rows near float32's largest values: r % 2 = 0 about 3e38 with one -3e38 (x - mean past
    // float32's range unscaled), 1 normal values times 1.6e38 (rms above 2^126).
    for (int64_t r = 0; r < c.rows; ++r) {
      float* row = v.data() + r * c.cols;
      for (int64_t i = 0; i < c.cols; ++i) row[i] = r % 2 == 0 ? 3e38f + 0.5e37f * std::tanh(row[i]) : 0.8e38f * std::tanh(row[i]);
      if (r % 2 == 0) row[c.cols / 3] = -3e38f;
    }
    return v;
  }
  for (int64_t r = 0; r < c.rows; ++r) {
    float* row = v.data() + r * c.cols;
    for (int64_t i = 0; i < c.cols; ++i) row[i] += c.layer ? 3.0f : 0.0f;  // a mean to subtract
    if (!c.edges) continue;
    switch (r % 9) {
      case 1: for (int64_t i = 0; i < c.cols; ++i) row[i] *= 1e30f; break;
      case 2: case 6: for (int64_t i = 0; i < c.cols; ++i) row[i] *= 1e-30f; break;
      case 3: for (int64_t i = 0; i < c.cols; ++i) row[i] = (i & 1) ? -0.0f : 0.0f; break;
      case 4: row[c.cols / 2] = std::numeric_limits<float>::infinity(); break;
      case 5: row[c.cols / 3] = std::numeric_limits<float>::quiet_NaN(); break;
      case 7: row[c.cols / 2] = 3e30f; break;
      case 8:
        for (int64_t i = 0; i < c.cols; ++i) row[i] = 0.0f;
        row[c.cols - 1] = -2e-30f;
        break;
      default: break;
    }
  }
  return v;
}

std::string case_name(const NormCase& c) {
  std::string n = std::string("norm/") + (c.layer ? "layer/" : "rms/") + tag(c.x);
  if (c.weight) n += std::string("/w.") + tag(*c.weight);
  if (c.bias) n += std::string("/b.") + tag(*c.bias);
  n += "/R" + std::to_string(c.rows) + ".C" + std::to_string(c.cols);
  if (c.edges) n += "/edges";
  if (c.subnormal) n += "/subnormal";
  if (c.huge) n += "/huge";
  if (c.eps == 0) n += "/eps0";
  if (c.max_threads < 1024) n += "/limit" + std::to_string(c.max_threads);
  return n;
}

CaseResult run_case(const NormCase& c, const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  const mto::Tensor x = tensor_of(norm_data(c, seed), {c.rows, c.cols}, c.x);
  std::optional<mto::Tensor> w, b;
  if (c.weight) w = tensor_of(normal_data(c.cols, seed + 1, 1.0f), {c.cols}, *c.weight);
  if (c.bias) b = tensor_of(normal_data(c.cols, seed + 2, 1.0f), {c.cols}, *c.bias);
  const mto::NormParams p = mto::check_norm(c.layer, x, w ? &*w : nullptr, b ? &*b : nullptr, c.eps);
  mto::Tensor out = empty_tensor({c.rows, c.cols}, p.out_dtype);
  mto::cpu::ThreadPool pool(1);
  mto::cpu::norm(pool, x, w ? &*w : nullptr, b ? &*b : nullptr, p, out);
  const std::vector<float> ref = floats_of(out);
  const mto::plan::Dispatch plan =
      mto::plan::plan_norm(p, c.x, p.out_dtype, c.weight, c.bias, mto::Tier::Simdgroup, c.max_threads);
  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(x)}};
  if (w) inputs[Arg::Weight] = bytes_of(*w);
  if (b) inputs[Arg::Bias] = bytes_of(*b);
  return run_plan_case("norm", plan, variant, inputs, {{Arg::Y, out.bytes()}}, [&](const std::map<Arg, Bytes>& o) {
    return compare_outputs(o.at(Arg::Y), p.out_dtype, ref, kTolerance, c.cols, "y");
  });
}

CaseResult plan_rules() {
  namespace plan = mto::plan;
  using mto::Tier;
  mto::NormParams p;
  p.rows = 3;
  p.cols = 4099;
  const DType f32 = DType::Float32;
  std::vector<std::pair<std::string, std::string>> checks = {
      {"int32 weight", expect_error(mto::code::DType, [&] { plan::plan_norm(p, f32, f32, DType::Int32, std::nullopt, Tier::Simdgroup); })},
      {"y of another dtype", expect_error(mto::code::DType, [&] { plan::plan_norm(p, f32, DType::Float16, std::nullopt, std::nullopt, Tier::Simdgroup); })},
      {"the cpu tier", expect_error(mto::code::Backend, [&] { plan::plan_norm(p, f32, f32, std::nullopt, std::nullopt, Tier::Cpu); })},
  };
  mto::NormParams wide = p;
  wide.cols = int64_t(1) << 31;
  checks.push_back({"2^31 columns", expect_error(mto::code::Shape, [&] {
                      plan::plan_norm(wide, f32, f32, std::nullopt, std::nullopt, Tier::Simdgroup);
                    })});
  // Threads: one SIMD-group for short rows, a thread per 4 elements, at most 1024.
  for (auto [cols, threads] : {std::pair<int64_t, uint32_t>{1, 32}, {33, 32}, {1000, 256}, {4099, 1024}, {128256, 1024}}) {
    p.cols = cols;
    const plan::Dispatch d = plan::plan_norm(p, DType::BFloat16, DType::BFloat16, f32, std::nullopt, Tier::TensorOps);
    const bool good = d.kernel == "norm_rows_bf16" && d.threads_per_threadgroup[0] == threads && d.threadgroups[0] == 3;
    checks.push_back({"threads for " + std::to_string(cols) + " columns",
                      good ? "" : d.kernel + " with " + std::to_string(d.threads_per_threadgroup[0]) + " threads"});
  }
  // A pipeline that allows fewer threads than the kernel's 1024: the plan stays within it, in
  // whole SIMD-groups; below one SIMD-group the op is left to the cpu backend.
  p.cols = 4099;
  for (auto [limit, threads] : {std::pair<uint32_t, uint32_t>{4096, 1024}, {768, 768}, {790, 768}, {32, 32}}) {
    const plan::Dispatch d = plan::plan_norm(p, f32, f32, std::nullopt, std::nullopt, Tier::Simdgroup, limit);
    checks.push_back({"a pipeline limit of " + std::to_string(limit),
                      d.threads_per_threadgroup[0] == threads
                          ? ""
                          : "planned " + std::to_string(d.threads_per_threadgroup[0]) + " threads"});
  }
  checks.push_back({"a pipeline limit below one SIMD-group", expect_error(mto::code::Backend, [&] {
                      plan::plan_norm(p, f32, f32, std::nullopt, std::nullopt, Tier::Simdgroup, 16);
                    })});
  return rule_checks(checks);
}

}  // namespace

std::vector<Case> norm_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/norm", [](const std::string&) { return plan_rules(); }});
  auto add = [&](const NormCase& c) {
    const std::string name = case_name(c);
    cases.push_back({name, [=](const std::string& v) { return run_case(c, name, v); }});
  };
  const DType dtypes[] = {DType::Float32, DType::Float16, DType::BFloat16};
  const std::pair<int64_t, int64_t> sizes[] = {{1, 1}, {3, 7}, {37, 33}, {37, 1000}, {3, 4099}};
  for (bool layer : {false, true}) {
    for (DType x : dtypes) {
      for (auto [rows, cols] : sizes) {
        add({layer, x, x, layer ? std::optional<DType>(x) : std::nullopt, rows, cols});
      }
      add({layer, x, std::nullopt, std::nullopt, 3, 1000});  // no weight (nor bias)
      // weight and bias of other dtypes than x
      add({layer, x, x == DType::Float32 ? DType::BFloat16 : DType::Float32,
           layer ? std::optional<DType>(DType::Float16) : std::nullopt, 3, 33});
      // the edges, with eps and with eps = 0, in one SIMD-group and in several
      for (int64_t cols : {33, 1000}) {
        add({layer, x, x, std::nullopt, 9, cols, true});
        add({layer, x, std::nullopt, std::nullopt, 9, cols, true, 0.0});
      }
    }
    // Plans shrunk to a pipeline's lower limit: 24 and 3 SIMD-groups over longer rows.
    add({layer, DType::Float32, DType::Float32, std::nullopt, 9, 4099, true, 1e-5, 790});
    add({layer, DType::Float16, DType::Float16, layer ? std::optional<DType>(DType::Float16) : std::nullopt, 3, 1000,
         false, 1e-5, 96});
    // Rows of the smallest subnormals (float32 only: a 16-bit x has none that small), in one
    // SIMD-group and in several: with eps, eps * 2^250 overflows, so eps alone decides the scale;
    // with eps = 0, 1 / rms is past float32's range unless the row is prescaled (the cpu backend
    // scales such rows too, so both are finite and comparable; an unscaled 2^-149 row, whose
    // squares underflow to 0, gives inf and NaN).
    for (double eps : {1e-5, 0.0}) {
      for (int64_t cols : {33, 1000}) add({layer, DType::Float32, DType::Float32, std::nullopt, 3, cols, false, eps, 1024, true});
    }
    // Rows near float32's largest values (the kernel prescales by 2^-127 or so, the cpu backend
    // by 2^-64), with eps and eps = 0, in one SIMD-group and in several.
    for (double eps : {1e-5, 0.0}) {
      for (int64_t cols : {33, 1000}) {
        NormCase c{layer, DType::Float32, DType::Float32, std::nullopt, 2, cols, false, eps};
        c.huge = true;
        add(c);
      }
    }
  }
  return cases;
}

}  // namespace mtoh_driver
