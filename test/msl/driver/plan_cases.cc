// The dispatch plans' own rules (native/core/plan/): what they refuse, with which error
// code, and what a tier without its own kernels falls back to. Kernel runs are the other cases.
#include <functional>
#include <optional>

#include "cases.h"
#include "core/error.h"
#include "core/plan/elementwise.h"
#include "core/plan/embedding.h"
#include "core/plan/grouped_linear.h"
#include "core/plan/layout.h"
#include "core/plan/norm.h"
#include "core/plan/pick.h"
#include "core/plan/rope.h"
#include "core/plan/softmax.h"

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
        // Empty work: every plan refuses it (Metal has no zero-size grid; the cpu backend writes
        // it without a kernel).
        {"empty quantize", expect_error(mto::code::Shape, [] { plan::plan_quantize(Format::MXFP4, kF32, 0, 64); })},
        {"linear M = 0", expect_error(mto::code::Shape, [] {
           plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 0, 8, 64, false, Tier::Simdgroup);
         })},
        {"linear K = 0", expect_error(mto::code::Shape, [] {
           plan::plan_linear(Format::MXFP4, 32, kF32, kF32, 4, 8, 0, true, Tier::Simdgroup);
         })},
        {"matmul K = 0", expect_error(mto::code::Shape, [] {
           plan::plan_matmul(kF32, kF32, kF32, 1, 4, 8, 0, false, Tier::Simdgroup);
         })},
        {"attention Lk = 0", expect_error(mto::code::Shape, [] {
           mto::AttentionParams p;
           p.B = 1; p.Hq = 2; p.Hkv = 1; p.Lq = 4; p.Lk = 0; p.D = 64; p.scale = 0.125f;
           p.out_shape = {1, 2, 4, 64};
           plan::plan_attention(p, kF32, kF32, false, Format::MXFP8_E4M3, kF32, Tier::Simdgroup);
         })},
        {"attention Lq = 0", expect_error(mto::code::Shape, [] {
           mto::AttentionParams p;
           p.B = 1; p.Hq = 2; p.Hkv = 1; p.Lq = 0; p.Lk = 4; p.D = 64; p.scale = 0.125f;
           p.out_shape = {1, 2, 0, 64};
           plan::plan_attention(p, kF32, kF32, false, Format::MXFP8_E4M3, kF32, Tier::Simdgroup);
         })},
        {"empty unary", expect_error(mto::code::Shape, [] {
           plan::plan_unary(mto::UnaryOp::Silu, kF32, kF32, mto::broadcast_shapes("x", {3, 0}, "x", {3, 0}),
                            Tier::Simdgroup);
         })},
        {"empty binary", expect_error(mto::code::Shape, [] {
           plan::plan_binary(mto::BinaryOp::Add, kF32, kF32, kF32, mto::broadcast_shapes("a", {0, 4}, "b", {1, 4}),
                             Tier::Simdgroup);
         })},
        {"norm cols = 0", expect_error(mto::code::Shape, [] {
           mto::NormParams p;
           p.rows = 3;
           plan::plan_norm(p, kF32, kF32, std::nullopt, std::nullopt, Tier::Simdgroup);
         })},
        {"softmax rows = 0", expect_error(mto::code::Shape, [] {
           mto::RowsParams p;
           p.cols = 8;
           plan::plan_softmax(p, kF32, kF32, Tier::Simdgroup);
         })},
        {"rope L = 0", expect_error(mto::code::Shape, [] {
           mto::RopeParams p;
           p.B = 1; p.H = 2; p.L = 0; p.D = 8; p.dims = 8;
           plan::plan_rope(p, kF32, kF32, Tier::Simdgroup);
         })},
        {"argmax rows = 0", expect_error(mto::code::Shape, [] {
           mto::PickParams p;
           p.rows = 0; p.cols = 16;
           plan::plan_argmax(kF32, p, Tier::Simdgroup);
         })},
        {"embedding of no ids", expect_error(mto::code::Shape, [] {
           mto::EmbeddingParams p;
           p.vocab = 4; p.dim = 32; p.count = 0;
           plan::plan_embedding(p, false, kF32, Format::MXFP4, 32, Tier::Simdgroup);
         })},
        {"embedding under a pipeline limit below one SIMD-group", expect_error(mto::code::Backend, [] {
           mto::EmbeddingParams p;
           p.vocab = 4; p.dim = 32; p.count = 2;
           plan::plan_embedding(p, false, kF32, Format::MXFP4, 32, Tier::Simdgroup, 31);
         })},
        {"groupedLinear T = 0", expect_error(mto::code::Shape, [] {
           mto::GroupedLinearParams p;
           p.T = 0; p.E = 2; p.N = 8; p.K = 64;
           plan::plan_grouped_linear(p, Format::MXFP4, 32, kF32, kF32, Tier::Simdgroup);
         })},
        {"an empty copy", expect_error(mto::code::Shape, [] {
           mto::CopyPart part;
           part.dims = {0, 4};
           part.src_strides = {4, 1};
           part.dst_strides = {4, 1};
           plan::plan_copy(part, kF32, 0, 0, Tier::Simdgroup);
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
    // 64 x 64 tensorops tiles for 16-bit x from 4 of them per GPU core (takes_big_tiles), never for
    // float32 x: on 40 cores from 160 (10 x 16 yes, 10 x 15 no), on 8 from 32 (4 x 8 yes, 4 x 7
    // no), on 80 not at 160.
    auto cores = [](int n) {
      mto::DeviceProfile d;
      d.gpu_cores = n;
      return d;
    };
    auto tops = [&](mto::DType x, int64_t M, int64_t N, int gpu_cores) {
      return plan::plan_linear(Format::MXFP4, 32, x, kF32, M, N, 64, false, Tier::TensorOps, cores(gpu_cores));
    };
    const mto::DType f16 = mto::DType::Float16;
    const plan::Dispatch big = tops(f16, 640, 1024, 40), fewer = tops(f16, 640, 960, 40), f32 = tops(kF32, 640, 1024, 40);
    const plan::Dispatch small_gpu = tops(f16, 256, 512, 8), small_gpu_fewer = tops(f16, 256, 448, 8);
    const plan::Dispatch ultra = tops(f16, 640, 1024, 80);
    if (big.kernel != "qlinear_tensorops_gemm_mxfp4_f16_t64" || big.threadgroups[0] != 16 || big.threadgroups[1] != 10 ||
        fewer.kernel != "qlinear_tensorops_gemm_mxfp4_f16" || fewer.threadgroups[0] != 30 ||
        f32.kernel != "qlinear_tensorops_gemm_mxfp4_f32" ||
        small_gpu.kernel != "qlinear_tensorops_gemm_mxfp4_f16_t64" || small_gpu.threadgroups[0] != 8 ||
        small_gpu_fewer.kernel != "qlinear_tensorops_gemm_mxfp4_f16" || ultra.kernel != "qlinear_tensorops_gemm_mxfp4_f16") {
      r.error_kind = "mismatch";
      r.message = "tensorops linear tiles: expected _t64 (16 x 10) for 640 x 1024 float16 x on 40 cores, 32 x 32 below "
                  "160 tiles, for float32 x and on 80 cores, _t64 from 32 tiles on 8 cores; got " + big.kernel + ", " +
                  fewer.kernel + ", " + f32.kernel + ", " + small_gpu.kernel + ", " + small_gpu_fewer.kernel + ", " +
                  ultra.kernel;
      return r;
    }
    // embedding within a pipeline's limit: the largest power of two under it (a 4096 row wants 256).
    mto::EmbeddingParams e;
    e.vocab = 4; e.dim = 4096; e.count = 2;
    if (plan::plan_embedding(e, false, kF32, Format::MXFP4, 32, Tier::Simdgroup).threads_per_threadgroup[0] != 256 ||
        plan::plan_embedding(e, false, kF32, Format::MXFP4, 32, Tier::Simdgroup, 200).threads_per_threadgroup[0] != 128) {
      r.error_kind = "mismatch";
      r.message = "embedding of a 4096 row should take 256 threads, 128 under a 200-thread pipeline limit";
      return r;
    }
    r.ok = true;
    return r;
  };
  return {c};
}

}  // namespace mtoh_driver
