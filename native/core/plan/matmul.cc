// The dense GEMM plans (dispatch_plan.h): plan_matmul, and plan_linear_dense, a linear with a
// dense weight run by the same kernels. Slots and geometry come from shaders/matmul_params.h.
#include <cstring>

#include "../../../shaders/matmul_params.h"
#include "../dispatch_plan.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

// Copied byte for byte into the kernel's `constant` argument: the size the MSL side sees.
static_assert(sizeof(MatmulKernelParams) == 24, "MatmulKernelParams layout");

}  // namespace

Dispatch plan_matmul(DType a, DType b, DType y, int64_t batch, int64_t M, int64_t N, int64_t K,
                     bool b_batched, Tier tier, const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  const char* suffix = float_suffix(a);
  if (!suffix || a != b) {
    throw Error(code::DType, std::string("the Metal matmul kernels take a and b of one dtype (float32, float16 or "
                                         "bfloat16), got a ") + dtype_name(a) + " and b " + dtype_name(b));
  }
  // Each instance writes its operands' dtype, the only one check_matmul gives the output.
  if (y != a) {
    throw Error(code::DType, std::string("the Metal matmul kernels write the operands' dtype ") + dtype_name(a) +
                                 ", not " + dtype_name(y));
  }
  if (batch <= 0 || M <= 0 || N <= 0 || K <= 0) {
    throw Error(code::Shape, "matmul needs batch, M, N, K > 0, got batch=" + std::to_string(batch) +
                                 " M=" + std::to_string(M) + " N=" + std::to_string(N) + " K=" + std::to_string(K));
  }
  check_i32("batch", batch);
  check_i32("M * K", M * K);
  check_i32("K * N", K * N);
  check_i32("M * N", M * N);

  MatmulKernelParams p = {};
  p.M = int32_t(M);
  p.N = int32_t(N);
  p.K = int32_t(K);
  p.b_batched = b_batched ? 1 : 0;

  Dispatch d;
  if (tier == Tier::Simdgroup) {
    d.library = "matmul";
    d.tier = Tier::Simdgroup;
    static_assert(MATMUL_GEMM_BIG == kBigTile, "the kernels' big tile is the plans'");
    const int64_t big = MATMUL_GEMM_BIG;
    const bool big_tiles = takes_big_tiles(batch, M, N, device);
    d.kernel = std::string("matmul_gemm_") + suffix + (big_tiles ? "_t64" : "");
    d.threadgroups[0] = ceil_div(N, big_tiles ? big : MATMUL_GEMM_BN);
    d.threadgroups[1] = ceil_div(M, big_tiles ? big : MATMUL_GEMM_BM);
    d.threads_per_threadgroup[0] = 32 * MATMUL_GEMM_SIMDGROUPS;
  } else {
    // TensorOps and TensorOpsMx: the MX scale planes concern quantized operands only.
    d.library = "matmul_tensorops";
    d.tier = Tier::TensorOps;
    static_assert(MATMUL_TOPS_BIG == kBigTile, "the kernels' big tile is the plans'");
    const int64_t big = MATMUL_TOPS_BIG;
    const bool big_tiles = takes_big_tiles(batch, M, N, device);
    d.kernel = std::string("matmul_tensorops_gemm_") + suffix + (big_tiles ? "_t64" : "");
    // matmul2d<..., execution_simdgroups<MATMUL_TOPS_SIMDGROUPS>> needs exactly that many SIMD-groups.
    d.threadgroups[0] = ceil_div(N, big_tiles ? big : MATMUL_TOPS_BN);
    d.threadgroups[1] = ceil_div(M, big_tiles ? big : MATMUL_TOPS_BM);
    d.threads_per_threadgroup[0] = 32 * MATMUL_TOPS_SIMDGROUPS;
  }
  d.threadgroups[2] = uint32_t(batch);
  d.buffers = {{MATMUL_BUFFER_A, Arg::A},
               {MATMUL_BUFFER_B, Arg::B},
               {MATMUL_BUFFER_Y, Arg::Y},
               {MATMUL_BUFFER_PARAMS, Arg::Params}};
  if (tier == Tier::Simdgroup) d.buffers.push_back({MATMUL_BUFFER_BIAS, Arg::Unused});
  d.params = bytes_of(p);
  return d;
}

Dispatch plan_linear_dense(DType x, DType w, DType y, int64_t M, int64_t N, int64_t K, bool has_bias, Tier tier,
                           const DeviceProfile& device) {
  if (tier == Tier::Cpu) throw Error(code::Backend, "the cpu tier has no Metal kernels to plan");
  // The simdgroup GEMM with w as its transposed right operand, on every tier.
  Dispatch d = plan_matmul(x, w, y, 1, M, N, K, false, Tier::Simdgroup, device);
  if (tier != Tier::Simdgroup) {
    d.fallback_reason = std::string("no ") + tier_name(tier) + " kernel for a dense weight yet; using the simdgroup GEMM";
  }
  MatmulKernelParams p;
  std::memcpy(&p, d.params.data(), sizeof(p));
  p.b_transposed = 1;
  p.has_bias = has_bias ? 1 : 0;
  d.params = bytes_of(p);
  d.buffers = {{MATMUL_BUFFER_A, Arg::X},
               {MATMUL_BUFFER_B, Arg::Weight},
               {MATMUL_BUFFER_Y, Arg::Y},
               {MATMUL_BUFFER_PARAMS, Arg::Params},
               {MATMUL_BUFFER_BIAS, has_bias ? Arg::Bias : Arg::Unused}};
  return d;
}

}  // namespace mto::plan
