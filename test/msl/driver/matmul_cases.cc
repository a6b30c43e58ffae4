// Dense matmul on the GPU (shaders/matmul.metal on the simdgroup tier, shaders/matmul_tensorops.metal
// on the tensorops tier) against the cpu backend's matmul: max |y - ref| <= 1e-4 * (1 + |ref|) for
// float32, float16 and bfloat16 operands, M at and around the 8-row and 32-row boundaries, N and K
// not multiples of any tile, batches with a shared and a batched b. y has the operands' dtype: the
// kernels round each element once as they store it, as the cpu backend does, so float16/bfloat16 y
// are allowed one unit in the last place more (compare_outputs). Also plan/matmul: what
// plan_matmul refuses.
#include <cstring>

#include "cases.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "cpu/ops.h"
#include "data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;

// Also for float16/bfloat16 (stricter than the 1e-3 there): the kernels multiply the
// operands exactly in float32 (a float16 or bfloat16 product is exact in float32) and accumulate
// in float32, as the cpu backend does.
constexpr double kTolerance = 1e-4;

struct MatmulShape {
  int64_t batch, M, N, K;
  bool b_batched;
};

mto::Tensor dense(const std::vector<float>& v, mto::Shape shape, DType dtype) {
  mto::Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.buffer = mto::make_buffer(v.size() * mto::dtype_size(dtype));
  mto::from_float32(dtype, v.data(), t.buffer->data(), v.size());
  return t;
}

Bytes bytes_of(const mto::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.buffer->data());
  return Bytes(p, p + t.buffer->bytes());
}

const char* short_name(DType t) { return t == DType::Float32 ? "f32" : t == DType::Float16 ? "f16" : "bf16"; }

CaseResult run_case(DType dt, MatmulShape s, const std::string& name, const std::string& variant, mto::Tier tier) {
  const uint64_t seed = seed_of(name);
  const int64_t b_batch = s.b_batched ? s.batch : 1;
  const mto::Tensor a = dense(normal_data(s.batch * s.M * s.K, seed), {s.batch, s.M, s.K}, dt);
  const mto::Tensor b = s.b_batched ? dense(normal_data(b_batch * s.K * s.N, seed + 1), {s.batch, s.K, s.N}, dt)
                                    : dense(normal_data(s.K * s.N, seed + 1), {s.K, s.N}, dt);
  mto::cpu::ThreadPool pool(1);
  const mto::MatmulParams mp = mto::check_matmul(a, b);
  std::vector<float> ref(size_t(s.batch * s.M * s.N));
  mto::cpu::matmul(pool, a, b, mp, ref.data());

  const mto::plan::Dispatch plan =
      mto::plan::plan_matmul(dt, dt, mp.out_dtype, s.batch, s.M, s.N, s.K, s.b_batched, tier);
  return run_plan_case("matmul", plan, variant, {{Arg::A, bytes_of(a)}, {Arg::B, bytes_of(b)}},
                       {{Arg::Y, ref.size() * mto::dtype_size(mp.out_dtype)}},
                       [&](const std::map<Arg, Bytes>& out) {
                         return compare_outputs(out.at(Arg::Y), mp.out_dtype, ref, kTolerance, s.N, "y");
                       });
}

// linear with a dense weight (plan_linear_dense: the simdgroup GEMM with w transposed, + bias)
// against the cpu backend's linear.
CaseResult run_linear_case(DType dt, int64_t M, int64_t N, int64_t K, bool with_bias, const std::string& name,
                           const std::string& variant, mto::Tier tier) {
  const uint64_t seed = seed_of(name);
  const mto::Tensor x = dense(normal_data(M * K, seed), {M, K}, dt);
  const mto::Tensor w = dense(normal_data(N * K, seed + 1), {N, K}, dt);
  const mto::Tensor bias = dense(normal_data(N, seed + 2), {N}, DType::Float32);
  const mto::Tensor* b = with_bias ? &bias : nullptr;
  mto::cpu::ThreadPool pool(1);
  const mto::LinearParams lp = mto::check_linear(mto::Operand{&x, nullptr}, mto::Operand{&w, nullptr}, b, std::nullopt);
  std::vector<float> ref(size_t(M * N));
  mto::cpu::linear(pool, mto::Operand{&x, nullptr}, mto::Operand{&w, nullptr}, b, lp, ref.data());
  const mto::plan::Dispatch plan = mto::plan::plan_linear_dense(dt, dt, lp.out_dtype, M, N, K, with_bias, tier);
  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(x)}, {Arg::Weight, bytes_of(w)}};
  if (with_bias) inputs[Arg::Bias] = bytes_of(bias);
  return run_plan_case("linear", plan, variant, inputs, {{Arg::Y, ref.size() * mto::dtype_size(lp.out_dtype)}},
                       [&](const std::map<Arg, Bytes>& out) {
                         return compare_outputs(out.at(Arg::Y), lp.out_dtype, ref, kTolerance, N, "y");
                       });
}

// "" when `make` throws mto::Error with `code`, else what happened instead.
std::string expect_error(const char* code, void (*make)()) {
  try {
    make();
  } catch (const mto::Error& e) {
    return std::string(e.code()) == code ? "" : std::string("threw ") + e.code() + ": " + e.what();
  }
  return std::string("did not throw ") + code;
}

CaseResult plan_rules() {
  CaseResult r;
  r.op = "plan";
  using mto::Tier;
  namespace plan = mto::plan;
  const struct {
    const char* what;
    std::string outcome;
  } checks[] = {
      {"a and b of different dtypes", expect_error(mto::code::DType, [] {
         plan::plan_matmul(DType::Float16, DType::BFloat16, DType::Float16, 1, 4, 8, 16, false, Tier::Simdgroup);
       })},
      {"y of a dtype other than the operands'", expect_error(mto::code::DType, [] {
         plan::plan_matmul(DType::Float16, DType::Float16, DType::Float32, 1, 4, 8, 16, false, Tier::Simdgroup);
       })},
      {"bool operands", expect_error(mto::code::DType, [] {
         plan::plan_matmul(DType::Bool, DType::Bool, DType::Bool, 1, 4, 8, 16, false, Tier::Simdgroup);
       })},
      {"K = 0", expect_error(mto::code::Shape, [] {
         plan::plan_matmul(DType::Float32, DType::Float32, DType::Float32, 1, 4, 8, 0, false, Tier::Simdgroup);
       })},
      {"M * K past 32-bit indices", expect_error(mto::code::Shape, [] {
         plan::plan_matmul(DType::Float32, DType::Float32, DType::Float32, 1, int64_t(1) << 20, 8,
                           int64_t(1) << 12, false, Tier::Simdgroup);
       })},
      {"the cpu tier", expect_error(mto::code::Backend, [] {
         plan::plan_matmul(DType::Float32, DType::Float32, DType::Float32, 1, 4, 8, 16, false, Tier::Cpu);
       })},
  };
  for (const auto& ch : checks) {
    if (ch.outcome.empty()) continue;
    r.error_kind = "mismatch";
    r.message = std::string(ch.what) + ": " + ch.outcome;
    return r;
  }
  // tensorops-mx runs dense operands on the tensorops kernel: scale planes are for quantized ones.
  const plan::Dispatch x =
      plan::plan_matmul(DType::Float16, DType::Float16, DType::Float16, 2, 9, 8, 64, false, Tier::TensorOpsMx);
  if (x.library != "matmul_tensorops" || x.kernel != "matmul_tensorops_gemm_f16" || x.threadgroups[2] != 2) {
    r.error_kind = "mismatch";
    r.message = "tensorops-mx matmul plan: expected matmul_tensorops_gemm_f16 over 2 batches, got " + x.kernel;
    return r;
  }
  // 64 x 64 tiles from 4 per GPU core (plan::takes_big_tiles), the same rule on both tiers: on 40
  // cores 3 x 53 = 159 stay 32 x 32 and 3 x 54 do not; on 8 cores from 32 (2 batches of 4 x 4
  // yes, of 3 x 5 no); on 80 cores not at 3 x 54.
  auto profile = [](int cores) {
    mto::DeviceProfile d;
    d.gpu_cores = cores;
    return d;
  };
  auto mm = [&](DType t, int64_t batch, int64_t M, int64_t N, Tier tier, int cores) {
    return plan::plan_matmul(t, t, t, batch, M, N, 64, false, tier, profile(cores));
  };
  for (const Tier tier : {Tier::TensorOps, Tier::Simdgroup}) {
    const DType t = tier == Tier::TensorOps ? DType::Float16 : DType::Float32;
    const std::string base = std::string(tier == Tier::TensorOps ? "matmul_tensorops_gemm_" : "matmul_gemm_") +
                             (t == DType::Float16 ? "f16" : "f32");
    const plan::Dispatch small = mm(t, 1, 192, 3392, tier, 40), big = mm(t, 1, 192, 3393, tier, 40);
    const plan::Dispatch base_gpu = mm(t, 2, 256, 256, tier, 8), base_gpu_fewer = mm(t, 2, 192, 320, tier, 8);
    const plan::Dispatch ultra = mm(t, 1, 192, 3393, tier, 80);
    if (small.kernel != base || small.threadgroups[0] != 106 || small.threadgroups[1] != 6 ||
        big.kernel != base + "_t64" || big.threadgroups[0] != 54 || big.threadgroups[1] != 3 ||
        base_gpu.kernel != base + "_t64" || base_gpu.threadgroups[2] != 2 || base_gpu_fewer.kernel != base ||
        ultra.kernel != base) {
      r.error_kind = "mismatch";
      r.message = std::string(mto::tier_name(tier)) + " matmul tiles: expected 106 x 6 of 32 for 192 x 3392 and 54 x 3 of 64 " +
                  "for 192 x 3393 on 40 cores, 64 from 32 tiles on 8 cores, 32 at 162 tiles on 80; got " + small.kernel +
                  ", " + big.kernel + ", " + base_gpu.kernel + ", " + base_gpu_fewer.kernel + ", " + ultra.kernel;
      return r;
    }
  }
  // A dense linear runs the simdgroup GEMM on every tier, saying so above it.
  const plan::Dispatch l = plan::plan_linear_dense(DType::Float16, DType::Float16, DType::Float16, 9, 8, 64, true,
                                                   Tier::TensorOps);
  if (l.library != "matmul" || l.kernel != "matmul_gemm_f16" || l.fallback_reason.empty()) {
    r.error_kind = "mismatch";
    r.message = "dense linear plan on tensorops: expected matmul_gemm_f16 with a fallback reason, got " + l.kernel;
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace

std::vector<Case> matmul_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/matmul", [](const std::string&) { return plan_rules(); }});
  // Names: prefix + dtype + /B<batch>[.bb: b batched] + /M../N../K..
  auto add = [&](DType dt, MatmulShape s) {
    std::string shape = "/B" + std::to_string(s.batch) + (s.b_batched ? ".bb" : "") + "/M" + std::to_string(s.M) +
                        "/N" + std::to_string(s.N) + "/K" + std::to_string(s.K);
    const std::pair<const char*, mto::Tier> tiers[] = {{"matmul/", mto::Tier::Simdgroup},
                                                       {"matmul-tensorops/", mto::Tier::TensorOps}};
    for (const auto& t : tiers) {
      const std::string name = t.first + std::string(short_name(dt)) + shape;
      const mto::Tier tier = t.second;
      cases.push_back({name, [=](const std::string& variant) { return run_case(dt, s, name, variant, tier); }});
    }
  };
  for (DType dt : {DType::Float32, DType::Float16, DType::BFloat16}) {
    // M around the 8-row and 32-row tiles; N = 37 a partial column tile; K = 50 a partial K step
    // (and not a multiple of 8 or 32).
    for (int64_t M : {1, 3, 8, 9, 33}) add(dt, {1, M, 37, 50, false});
    // Whole tiles, several K steps.
    add(dt, {1, 64, 64, 96, false});
    // Batches: one b for all, and one b per batch; tails everywhere.
    add(dt, {2, 33, 40, 70, false});
    add(dt, {3, 9, 37, 45, true});
  }
  // Enough tiles for the tensorops tier's 64 x 64 tiles (_t64), partial in M and N.
  add(DType::Float32, {10, 250, 260, 40, false});
  add(DType::BFloat16, {10, 250, 260, 40, true});
  // linear with a dense weight: decode rows and a prefill, partial tiles, with and without a bias,
  // planned for the simdgroup tier and (the same kernel) for tensorops.
  auto add_linear = [&](DType dt, int64_t M, int64_t N, int64_t K, bool with_bias, mto::Tier tier) {
    const std::string name = std::string("linear-dense/") + short_name(dt) + "/M" + std::to_string(M) + "/N" +
                             std::to_string(N) + "/K" + std::to_string(K) + (with_bias ? "/bias" : "") +
                             (tier == mto::Tier::TensorOps ? "/tensorops" : "");
    cases.push_back({name, [=](const std::string& variant) {
                       return run_linear_case(dt, M, N, K, with_bias, name, variant, tier);
                     }});
  };
  add_linear(DType::Float32, 1, 37, 50, true, mto::Tier::Simdgroup);
  add_linear(DType::Float32, 33, 64, 96, false, mto::Tier::Simdgroup);
  add_linear(DType::Float16, 9, 40, 70, true, mto::Tier::Simdgroup);
  add_linear(DType::BFloat16, 3, 37, 45, false, mto::Tier::Simdgroup);
  add_linear(DType::Float16, 65, 33, 64, true, mto::Tier::TensorOps);
  // Enough tiles for the 64 x 64 x 16 GEMM, w transposed through it, partial tiles and K step.
  add_linear(DType::Float16, 520, 1290, 24, true, mto::Tier::Simdgroup);
  return cases;
}

}  // namespace mtoh_driver
