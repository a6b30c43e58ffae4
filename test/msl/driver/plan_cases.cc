// The dispatch plans' own rules (native/core/dispatch_plan.cc): what they refuse, with which error
// code, and what a tier without its own kernels falls back to. Kernel runs are the other cases.
#include <functional>

#include "cases.h"
#include "core/error.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::Format;
constexpr DType kF32 = DType::Float32;
using mto::Tier;
namespace plan = mto::plan;

// "" when `make` throws mto::Error with `code`, else what happened instead.
std::string expect_error(const char* code, const std::function<void()>& make) {
  try {
    make();
  } catch (const mto::Error& e) {
    return std::string(e.code()) == code ? "" : std::string("threw ") + e.code() + ": " + e.what();
  }
  return std::string("did not throw ") + code;
}

}  // namespace

std::vector<Case> plan_cases() {
  Case c;
  c.name = "plan/rules";
  c.run = [](const std::string&) {
    CaseResult r;
    r.op = "plan";
    struct Check {
      const char* what;
      std::string outcome;
    };
    const Check checks[] = {
        {"K not a multiple of 32", expect_error(mto::code::Shape, [] {
           plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 4, 8, 48, false, Tier::Simdgroup);
         })},
        {"K not a multiple of the affine group", expect_error(mto::code::Shape, [] {
           plan::plan_linear(Format::AFFINE4, 128, kF32, kF32, 4, 8, 192, false, Tier::Simdgroup);
         })},
        {"an MX block other than 32", expect_error(mto::code::Format, [] {
           plan::plan_linear(Format::MXFP8_E4M3, 64, kF32, kF32, 4, 8, 128, false, Tier::Simdgroup);
         })},
        {"bool y", expect_error(mto::code::DType, [] {
           plan::plan_linear(Format::MXFP4, 32, DType::Float16, DType::Bool, 4, 8, 64, false, Tier::Simdgroup);
         })},
        {"bool activations", expect_error(mto::code::DType, [] {
           plan::plan_linear(Format::MXFP4, 32, DType::Bool, kF32, 4, 8, 64, false, Tier::Simdgroup);
         })},
        {"the cpu tier", expect_error(mto::code::Backend, [] {
           plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 4, 8, 64, false, Tier::Cpu);
         })},
        {"M * K past 32-bit indices", expect_error(mto::code::Shape, [] {
           plan::plan_linear(Format::MXFP4, 32, kF32, kF32, int64_t(1) << 20, 8, int64_t(1) << 12, false,
                             Tier::Simdgroup);
         })},
        {"GPU quantize to affine", expect_error(mto::code::Format, [] {
           plan::plan_quantize(Format::AFFINE4, DType::Float32, 2, 64);
         })},
        {"quantize cols not a multiple of 32", expect_error(mto::code::Shape, [] {
           plan::plan_quantize(Format::MXFP4, DType::Float32, 2, 48);
         })},
    };
    for (const Check& ch : checks) {
      if (ch.outcome.empty()) continue;
      r.error_kind = "mismatch";
      r.message = std::string(ch.what) + ": " + ch.outcome;
      return r;
    }
    // The tensorops tier: its own matmul2d kernel for M > 8, the shared decode kernel below;
    // tensorops-mx has no linear kernels of its own yet and says so.
    const plan::Dispatch d = plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 4, 8, 64, false, Tier::TensorOps);
    const plan::Dispatch g = plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 9, 8, 64, false, Tier::TensorOps);
    const plan::Dispatch x = plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 9, 8, 64, false, Tier::TensorOpsMx);
    if (d.tier != Tier::TensorOps || !d.fallback_reason.empty() || d.kernel != "qlinear_decode_mxfp4_f32" ||
        g.tier != Tier::TensorOps || g.library != "qlinear_tensorops" || g.kernel != "qlinear_tensorops_gemm_mxfp4_f32" ||
        x.tier != Tier::TensorOps || x.kernel != g.kernel || x.fallback_reason.empty()) {
      r.error_kind = "mismatch";
      r.message = "tensorops plans: decode for M <= 8, qlinear_tensorops_gemm above; tensorops-mx falls back to "
                  "tensorops and says why";
      return r;
    }
    r.ok = true;
    return r;
  };
  return {c};
}

}  // namespace mtoh_driver
