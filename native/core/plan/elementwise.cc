// Elementwise plans (elementwise.h). Slots, geometry and op codes come from
// shaders/elementwise_params.h, which the kernels include too.
#include "elementwise.h"

#include "../../../shaders/elementwise_params.h"
#include "plan_util.h"

namespace mto::plan {
namespace {

using namespace util;

static_assert(sizeof(ElementwiseKernelParams) == 4 * (7 + 3 * ELEMENTWISE_MAX_DIMS), "ElementwiseKernelParams layout");

int64_t total_of(const Broadcast& bc) {
  int64_t n = 1;
  for (int64_t d : bc.dims) n *= d;
  return n;
}

Dispatch base(const std::string& kernel, int64_t total, const ElementwiseKernelParams& p) {
  // An empty output has nothing to dispatch (and Metal refuses a zero-size grid): the caller
  // declines and the cpu backend writes nothing.
  if (total <= 0) throw Error(code::Shape, "elementwise: an empty output has nothing to dispatch");
  Dispatch d;
  d.library = "elementwise";
  d.kernel = kernel;
  d.tier = Tier::Simdgroup;
  d.threadgroups[0] = ceil_div(total, ELEMENTWISE_THREADS * ELEMENTWISE_RUN);
  d.threads_per_threadgroup[0] = ELEMENTWISE_THREADS;
  d.params = bytes_of(p);
  return d;
}

const char* float_dtype(const char* op, const char* what, DType t) {
  const char* s = float_suffix(t);
  if (!s) {
    throw Error(code::DType, std::string("the Metal ") + op + " kernels take float32, float16 or bfloat16 " + what +
                                 ", got " + dtype_name(t));
  }
  return s;
}

}  // namespace

Dispatch plan_unary(UnaryOp op, DType x, DType out, const Broadcast& bc, Tier tier) {
  require_metal(tier);
  const char* sx = float_dtype("unary", "x", x);
  if (out != x) {
    throw Error(code::DType, std::string("the Metal unary kernels write x's dtype ") + dtype_name(x) + ", not " +
                                 dtype_name(out));
  }
  const int64_t total = total_of(bc);
  check_i32("elements", total);
  ElementwiseKernelParams p = {};
  p.op = op == UnaryOp::Gelu ? ELEMENTWISE_GELU : op == UnaryOp::GeluTanh ? ELEMENTWISE_GELU_TANH : ELEMENTWISE_SILU;
  p.total = int32_t(total);
  p.rank = 1;
  p.a_step = 1;
  p.b_step = 1;
  Dispatch d = base(std::string("elementwise_unary_") + sx, total, p);
  d.buffers = {{ELEMENTWISE_BUFFER_A, Arg::X}, {ELEMENTWISE_BUFFER_OUT, Arg::Y},
               {ELEMENTWISE_BUFFER_PARAMS, Arg::Params}};
  return d;
}

Dispatch plan_binary(BinaryOp op, DType a, DType b, DType out, const Broadcast& bc, Tier tier, float alpha,
                     float limit) {
  require_metal(tier);
  const char* sa = float_dtype("binary", "a", a);
  const char* sb = float_dtype("binary", "b", b);
  const DType want = a == b ? a : DType::Float32;
  if (out != want) {
    throw Error(code::DType, std::string("the Metal binary kernels write ") + dtype_name(want) + " for " +
                                 dtype_name(a) + " and " + dtype_name(b) + ", not " + dtype_name(out));
  }
  const int64_t total = total_of(bc);
  check_i32("elements", total);
  const size_t rank = bc.dims.size();
  if (rank == 0 || rank != bc.a_strides.size() || rank != bc.b_strides.size()) {
    throw Error(code::Shape, "elementwise: a broadcast without dimensions");
  }
  ElementwiseKernelParams p = {};
  p.op = op == BinaryOp::Mul         ? ELEMENTWISE_MUL
         : op == BinaryOp::Swiglu    ? ELEMENTWISE_SWIGLU
         : op == BinaryOp::SwigluOai ? ELEMENTWISE_SWIGLU_OAI
                                     : ELEMENTWISE_ADD;
  p.alpha = alpha;
  p.limit = limit;
  p.total = int32_t(total);
  p.rank = int32_t(rank);
  const bool steps = rank == 1 && bc.a_strides[0] <= 1 && bc.b_strides[0] <= 1;
  std::string kernel;
  if (steps) {
    p.a_step = int32_t(bc.a_strides[0]);
    p.b_step = int32_t(bc.b_strides[0]);
    kernel = std::string("elementwise_binary_") + sa + "_" + sb;
  } else {
    if (rank > ELEMENTWISE_MAX_DIMS) {
      throw Error(code::Shape, "the Metal elementwise kernels broadcast over at most " +
                                   std::to_string(ELEMENTWISE_MAX_DIMS) + " merged dimensions, got " +
                                   std::to_string(rank));
    }
    for (size_t k = 0; k < rank; ++k) {
      p.dims[k] = int32_t(bc.dims[k]);  // each divides total, so fits
      check_i32("a stride", bc.a_strides[k]);
      check_i32("b stride", bc.b_strides[k]);
      p.a_strides[k] = int32_t(bc.a_strides[k]);
      p.b_strides[k] = int32_t(bc.b_strides[k]);
    }
    kernel = std::string("elementwise_binary_strided_") + sa + "_" + sb;
  }
  Dispatch d = base(kernel, total, p);
  d.buffers = {{ELEMENTWISE_BUFFER_A, Arg::A}, {ELEMENTWISE_BUFFER_B, Arg::B}, {ELEMENTWISE_BUFFER_OUT, Arg::Y},
               {ELEMENTWISE_BUFFER_PARAMS, Arg::Params}};
  return d;
}

}  // namespace mto::plan
