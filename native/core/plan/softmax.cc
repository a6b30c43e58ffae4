// softmax plan (softmax.h). Slots and geometry come from shaders/softmax_params.h, which the
// kernel includes too.
#include "softmax.h"

#include "../../../shaders/softmax_params.h"
#include "plan_util.h"

namespace mto::plan {

using namespace util;

static_assert(sizeof(SoftmaxKernelParams) == 8, "SoftmaxKernelParams layout");

Dispatch plan_softmax(const RowsParams& p, DType x, DType y, Tier tier, uint32_t max_threads) {
  require_metal(tier);
  const char* sx = float_suffix(x);
  if (!sx) throw Error(code::DType, std::string("the Metal softmax kernel takes float32, float16 or bfloat16 x, got ") + dtype_name(x));
  if (y != x) {
    throw Error(code::DType, std::string("the Metal softmax kernel writes x's dtype ") + dtype_name(x) + ", not " +
                                 dtype_name(y));
  }
  if (p.rows <= 0 || p.cols <= 0) throw Error(code::Shape, "softmax needs rows and cols > 0");
  check_i32("cols", p.cols);
  check_i32("rows", p.rows);
  SoftmaxKernelParams kp = {};
  kp.cols = int32_t(p.cols);

  Dispatch d;
  d.library = "softmax";
  d.kernel = std::string("softmax_rows_") + sx;
  d.tier = Tier::Simdgroup;
  d.threadgroups[0] = uint32_t(p.rows);
  d.threads_per_threadgroup[0] = row_threads(p.cols, SOFTMAX_READS, thread_cap(max_threads, SOFTMAX_MAX_THREADS, d.kernel.c_str()));
  d.buffers = {{SOFTMAX_BUFFER_X, Arg::X}, {SOFTMAX_BUFFER_Y, Arg::Y}, {SOFTMAX_BUFFER_PARAMS, Arg::Params}};
  d.params = bytes_of(kp);
  return d;
}

}  // namespace mto::plan
