// rmsNorm / layerNorm plan (norm.h). Slots and geometry come from shaders/norm_params.h, which
// the kernel includes too.
#include "norm.h"

#include "../../../shaders/norm_params.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

static_assert(sizeof(NormKernelParams) == 24, "NormKernelParams layout");

int32_t dtype_code(const char* what, std::optional<DType> t) {
  if (!t) return NORM_DTYPE_NONE;
  switch (*t) {
    case DType::Float32: return NORM_DTYPE_F32;
    case DType::Float16: return NORM_DTYPE_F16;
    case DType::BFloat16: return NORM_DTYPE_BF16;
    default:
      throw Error(code::DType, std::string("the Metal norm kernel reads a float32, float16 or bfloat16 ") + what +
                                   ", got " + dtype_name(*t));
  }
}

}  // namespace

Dispatch plan_norm(const NormParams& p, DType x, DType y, std::optional<DType> weight, std::optional<DType> bias,
                   Tier tier, uint32_t max_threads) {
  require_metal(tier);
  const char* sx = float_suffix(x);
  if (!sx) throw Error(code::DType, std::string("the Metal norm kernel takes float32, float16 or bfloat16 x, got ") + dtype_name(x));
  if (y != x) {
    throw Error(code::DType, std::string("the Metal norm kernel writes x's dtype ") + dtype_name(x) + ", not " +
                                 dtype_name(y));
  }
  if (p.rows <= 0 || p.cols <= 0) throw Error(code::Shape, "norm needs rows and cols > 0");
  check_i32("cols", p.cols);
  check_i32("rows", p.rows);
  NormKernelParams kp = {};
  kp.cols = int32_t(p.cols);
  kp.layer = p.layer ? 1 : 0;
  kp.weight_dtype = dtype_code("weight", weight);
  kp.bias_dtype = dtype_code("bias", bias);
  kp.eps = p.eps;

  Dispatch d;
  d.library = "norm";
  d.kernel = std::string("norm_rows_") + sx;
  d.tier = Tier::Simdgroup;
  d.threadgroups[0] = uint32_t(p.rows);
  d.threads_per_threadgroup[0] = row_threads(p.cols, NORM_READS, thread_cap(max_threads, NORM_MAX_THREADS, d.kernel.c_str()));
  d.buffers = {{NORM_BUFFER_X, Arg::X},
               {NORM_BUFFER_WEIGHT, weight ? Arg::Weight : Arg::Unused},
               {NORM_BUFFER_BIAS, bias ? Arg::Bias : Arg::Unused},
               {NORM_BUFFER_Y, Arg::Y},
               {NORM_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(kp);
  return d;
}

}  // namespace mto::plan
