// Quantized linear on the tensorops-mx tier: mxfp8, mxfp8_e5m2 and mxfp4 weights with float16 x
// through scale-plane matmul2d (shaders/qlinear_tensorops_mx.metal, the harness's model of
// tensor_blockwise), y of each float dtype, and every other format, dtype and row size through the
// tensorops kernels the plan falls back to: every docs/design/API.md format runs on this tier.
// Against the cpu backend's y of the same dtype (compare_outputs).
// Also plan/linear-mx: which plans take the scale-plane kernel and why the others do not.
#include "cases.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::Format;
using mto::Tier;

// Scale-plane matmul2d: the products of float16 x and fp8/fp4 weights are exact in float32, but
// how Apple's implementation accumulates them is undocumented, so the bound for float16
// paths. The fallback kernels accumulate in float32 like the cpu backend.
constexpr double kNativeTolerance = 1e-3;
constexpr double kFallbackTolerance = 1e-4;

CaseResult plan_rules() {
  CaseResult r;
  r.op = "plan";
  namespace plan = mto::plan;
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  struct Expect {
    Format f;
    DType x, y;
    int64_t M, K;
    const char* kernel;  // the plan's kernel
    const char* reason;  // text its fallback_reason contains ("" = none)
  };
  const Expect expects[] = {
      {Format::MXFP4, f16, f32, 9, 256, "qlinear_tensorops_mx_gemm_mxfp4_f16", ""},
      {Format::MXFP8_E5M2, f16, f32, 33, 128, "qlinear_tensorops_mx_gemm_mxfp8_e5m2_f16", ""},
      {Format::MXFP8_E4M3, f16, f16, 33, 128, "qlinear_tensorops_mx_gemm_mxfp8_f16_of16", ""},
      {Format::MXFP4, f16, bf16, 9, 256, "qlinear_tensorops_mx_gemm_mxfp4_f16_obf16", ""},
      {Format::MXFP4, f16, f32, 4, 256, "qlinear_decode_mxfp4_f16", ""},  // decode: the shared GEMV
      {Format::MXFP4, f16, f16, 4, 256, "qlinear_decode_mxfp4_f16_of16", ""},
      {Format::MXFP4, f32, f32, 9, 256, "qlinear_tensorops_gemm_mxfp4_f32", "float16"},
      {Format::MXFP8_E4M3, bf16, bf16, 9, 256, "qlinear_tensorops_gemm_mxfp8_bf16_obf16", "float16"},
      {Format::MXINT8, f16, f32, 9, 256, "qlinear_tensorops_gemm_mxint8_f16", "no scale-plane element type"},
      {Format::MXFP6_E2M3, f16, f32, 9, 256, "qlinear_tensorops_gemm_mxfp6_e2m3_f16", "no scale-plane element type"},
      {Format::MXFP4, f16, f16, 9, 96, "qlinear_tensorops_gemm_mxfp4_f16_of16", "multiple of 128"},
  };
  for (const Expect& e : expects) {
    const plan::Dispatch d = plan::plan_linear(e.f, 32, e.x, e.y, e.M, 37, e.K, false, Tier::TensorOpsMx);
    const bool native = d.library == "qlinear_tensorops_mx";
    const bool ok = d.kernel == e.kernel && (native ? d.tier == Tier::TensorOpsMx : d.tier == Tier::TensorOps) &&
                    (*e.reason ? d.fallback_reason.find(e.reason) != std::string::npos : d.fallback_reason.empty());
    if (!ok) {
      r.error_kind = "mismatch";
      r.message = std::string("expected ") + e.kernel + " (" + e.reason + "), got " + d.kernel + " (" +
                  d.fallback_reason + ")";
      return r;
    }
  }
  r.ok = true;
  return r;
}

}  // namespace

std::vector<Case> linear_mx_cases() {
  std::vector<Case> cases;
  cases.push_back({"plan/linear-mx", [](const std::string&) { return plan_rules(); }});
  auto add = [&](Format f, int block, DType x, int64_t M, int64_t N, int64_t K, bool bias, double tol,
                 DType y = DType::Float32) {
    const std::string name = linear_case_name("linear-tensorops-mx/", f, block, x, y, M, N, K, bias);
    cases.push_back({name, [=](const std::string& variant) {
                       return run_linear_case(f, block, x, y, M, N, K, bias, name, variant, Tier::TensorOpsMx, tol);
                     }});
  };
  // Scale planes: M at and past the 32-row tile, N = 37 a partial column tile, K one and two
  // 128-byte rows (fp8: K = 128, 256; fp4: K = 256, 512), with and without bias; M <= 8 decodes.
  for (Format f : {Format::MXFP8_E4M3, Format::MXFP8_E5M2, Format::MXFP4}) {
    const int64_t K = f == Format::MXFP4 ? 256 : 128;
    for (int64_t M : {1, 8, 9, 33}) add(f, 32, DType::Float16, M, 37, K, M == 33, kNativeTolerance);
    add(f, 32, DType::Float16, 40, 64, 2 * K, true, kNativeTolerance);
    // y in float16 (x's dtype, linear's default) and bfloat16, rounded once as the epilogue stores
    // it: the scale-plane kernel at both tile sizes, and the decode kernel it pairs with.
    add(f, 32, DType::Float16, 9, 37, K, false, kNativeTolerance, DType::Float16);
    add(f, 32, DType::Float16, 40, 64, 2 * K, true, kNativeTolerance, DType::Float16);
    add(f, 32, DType::Float16, 33, 37, K, true, kNativeTolerance, DType::BFloat16);
    add(f, 32, DType::Float16, 8, 37, K, false, kNativeTolerance, DType::Float16);
  }
  // Every format on this tier through the fallback: float32 x, decode and tiled kernels.
  const struct {
    Format f;
    int block;
    int64_t K;
  } all[] = {{Format::MXFP8_E4M3, 32, 96}, {Format::MXFP8_E5M2, 32, 96}, {Format::MXFP6_E3M2, 32, 96},
             {Format::MXFP6_E2M3, 32, 96}, {Format::MXFP4, 32, 96},      {Format::MXINT8, 32, 96},
             {Format::MXINT4, 32, 96},     {Format::MXINT2, 32, 96},     {Format::AFFINE4, 64, 192},
             {Format::AFFINE8, 128, 384}};
  for (const auto& c : all)
    for (int64_t M : {3, 33}) add(c.f, c.block, DType::Float32, M, 37, c.K, M == 33, kFallbackTolerance);
  // float16 x that the scale-plane kernel refuses: a format it has no type for, rows not 128 bytes.
  add(Format::MXINT4, 32, DType::Float16, 33, 37, 256, false, kFallbackTolerance);
  add(Format::MXFP4, 32, DType::Float16, 33, 37, 96, false, kFallbackTolerance);
  return cases;
}

}  // namespace mtoh_driver
