// Shape and dtype rules of the elementwise ops (core/ops.h): NumPy broadcasting and dtype
// promotion.
#include <algorithm>
#include <cmath>
#include <string>

#include "error.h"
#include "ops.h"

namespace mto {
Broadcast broadcast_shapes(const char* a_name, const Shape& a, const char* b_name, const Shape& b) {
  const size_t rank = std::max(a.size(), b.size());
  Broadcast bc;
  bc.out_shape.assign(rank, 1);
  std::vector<int64_t> as(rank, 0), bs(rank, 0);
  int64_t a_stride = 1, b_stride = 1;
  for (size_t i = rank; i-- > 0;) {  // right-aligned, as NumPy
    const int64_t ad = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t bd = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (ad != bd && ad != 1 && bd != 1) {
      throw Error(code::Shape, std::string(a_name) + " " + shape_string(a) + " and " + b_name + " " +
                                   shape_string(b) + " do not broadcast (dimension " +
                                   std::to_string(int64_t(i) - int64_t(rank)) + ": " + std::to_string(ad) +
                                   " vs " + std::to_string(bd) + ")");
    }
    bc.out_shape[i] = ad == 1 ? bd : ad;  // a 0 broadcasts with 0 or 1 only, and gives 0
    as[i] = ad == 1 ? 0 : a_stride;
    bs[i] = bd == 1 ? 0 : b_stride;
    a_stride *= ad;
    b_stride *= bd;
  }
  // Merge dimension i into i + 1 (inner) where both operands stay linear across them; drop
  // dimensions of extent 1.
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = bc.out_shape[i];
    if (d == 1) continue;
    bc.dims.push_back(d);
    bc.a_strides.push_back(as[i]);
    bc.b_strides.push_back(bs[i]);
  }
  // Now merge from the inside out: outer dimension k merges into k + 1 when
  // stride[k] == stride[k + 1] * dims[k + 1] for both operands (0 == 0 * n counts).
  Shape dims;
  std::vector<int64_t> sa, sb;
  for (size_t k = 0; k < bc.dims.size(); ++k) {
    dims.push_back(bc.dims[k]);
    sa.push_back(bc.a_strides[k]);
    sb.push_back(bc.b_strides[k]);
    while (dims.size() >= 2) {
      const size_t o = dims.size() - 2, n = dims.size() - 1;
      if (sa[o] != sa[n] * dims[n] || sb[o] != sb[n] * dims[n]) break;
      dims[o] *= dims[n];
      sa[o] = sa[n];
      sb[o] = sb[n];
      dims.pop_back();
      sa.pop_back();
      sb.pop_back();
    }
  }
  if (dims.empty()) {  // every dimension 1: one element
    dims.push_back(1);
    sa.push_back(0);
    sb.push_back(0);
  }
  bc.dims = std::move(dims);
  bc.a_strides = std::move(sa);
  bc.b_strides = std::move(sb);
  return bc;
}

ElementwiseParams check_unary(const char* op, const Tensor& x) {
  require_float(std::string(op) + ": x", x.dtype);
  ElementwiseParams p;
  p.bc = broadcast_shapes("x", x.shape, "x", x.shape);
  p.out_dtype = x.dtype;
  return p;
}

ElementwiseParams check_binary(const char* op, const Tensor& a, const Tensor& b) {
  const bool swiglu = std::string(op) == "swiglu" || std::string(op) == "swiglu_oai";
  const char* an = swiglu ? "gate" : "a";
  const char* bn = swiglu ? "up" : "b";
  require_float(std::string(op) + ": " + an, a.dtype);
  require_float(std::string(op) + ": " + bn, b.dtype);
  ElementwiseParams p;
  p.bc = broadcast_shapes(an, a.shape, bn, b.shape);
  p.out_dtype = a.dtype == b.dtype ? a.dtype : DType::Float32;
  return p;
}

ElementwiseParams check_swiglu_oai(const Tensor& gate, const Tensor& up, double alpha, double limit) {
  if (!(std::isfinite(alpha) && alpha > 0)) {
    throw Error(code::Arg, "swiglu: alpha must be a finite number > 0; got " + std::to_string(alpha));
  }
  if (!(limit > 0)) throw Error(code::Arg, "swiglu: limit must be a number > 0 (Infinity: no clamp); got " + std::to_string(limit));
  ElementwiseParams p = check_binary("swiglu_oai", gate, up);
  p.alpha = float(alpha);
  p.limit = float(limit);
  return p;
}

}  // namespace mto
