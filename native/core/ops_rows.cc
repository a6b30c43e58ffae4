// Shape and dtype rules of the ops that work along the last axis (core/ops.h): rmsNorm,
// layerNorm, rope, softmax.
#include <cmath>
#include <string>

#include "error.h"
#include "ops.h"

namespace mto {
namespace {

void require_vector(const char* op, const char* arg, const Tensor& t, int64_t n, const char* what) {
  if (t.shape.size() != 1 || t.shape[0] != n) {
    throw Error(code::Shape, std::string(op) + ": " + arg + " must have shape [" + std::to_string(n) +
                                 "] (" + what + "); got " + shape_string(t.shape));
  }
}

// The ops over the last axis need one.
void require_rank1(const char* op, const Tensor& x) {
  if (x.shape.empty()) throw Error(code::Shape, std::string(op) + ": x must have rank >= 1 (it works along the last axis); got a scalar");
}

}  // namespace

NormParams check_norm(bool layer, const Tensor& x, const Tensor* weight, const Tensor* bias, double eps) {
  const char* op = layer ? "layerNorm" : "rmsNorm";
  require_float(std::string(op) + ": x", x.dtype);
  require_rank1(op, x);
  NormParams p;
  p.layer = layer;
  p.cols = x.shape.back();
  p.rows = shape_rows(x.shape);
  if (weight) {
    require_float(std::string(op) + ": weight", weight->dtype);
    require_vector(op, "weight", *weight, p.cols, "x's last dimension");
  }
  if (bias) {
    require_float(std::string(op) + ": bias", bias->dtype);
    require_vector(op, "bias", *bias, p.cols, "x's last dimension");
  }
  if (!(eps >= 0) || !std::isfinite(eps)) {
    throw Error(code::Arg, std::string(op) + ": eps must be a finite number >= 0; got " + std::to_string(eps));
  }
  p.eps = float(eps);
  p.out_dtype = x.dtype;
  return p;
}

RopeParams check_rope(const Tensor& x, const Tensor* positions, const Tensor* freqs, bool blhd,
                      bool neox, double base, int64_t offset, std::optional<int64_t> dims) {
  require_float("rope: x", x.dtype);
  if (x.shape.size() != 4) {
    throw Error(code::Shape, std::string("rope: x must have rank 4 ") + (blhd ? "[B, L, H, D]" : "[B, H, L, D]") +
                                 "; got " + shape_string(x.shape));
  }
  RopeParams p;
  p.blhd = blhd;
  p.neox = neox;
  p.B = x.shape[0];
  p.H = blhd ? x.shape[2] : x.shape[1];
  p.L = blhd ? x.shape[1] : x.shape[2];
  p.D = x.shape[3];
  p.dims = dims.value_or(p.D);
  // D = 0 (an empty x): nothing to rotate, dims defaults to 0.
  if ((p.dims < 2 && !(p.dims == 0 && p.D == 0)) || p.dims > p.D || p.dims % 2 != 0) {
    throw Error(code::Arg, "rope: dims must be an even number in [2, " + std::to_string(p.D) +
                               "] (the head dimension); got " + std::to_string(p.dims));
  }
  if (positions) {
    if (positions->dtype != DType::Int32) {
      throw Error(code::DType, std::string("rope: positions must be an int32 tensor; got dtype '") +
                                   dtype_name(positions->dtype) + "'");
    }
    require_vector("rope", "positions", *positions, p.L, "one per row of x");
    p.has_positions = true;
  }
  if (freqs) {
    if (freqs->dtype != DType::Float32) {
      throw Error(code::DType, std::string("rope: freqs must be a float32 tensor; got dtype '") +
                                   dtype_name(freqs->dtype) + "'");
    }
    require_vector("rope", "freqs", *freqs, p.dims / 2, "dims / 2");
    p.has_freqs = true;
  } else if (!(base > 0) || !std::isfinite(base)) {
    throw Error(code::Arg, "rope: base must be a finite number > 0; got " + std::to_string(base));
  }
  p.base = base;
  p.offset = offset;
  p.out_dtype = x.dtype;
  return p;
}

RowsParams check_softmax(const Tensor& x) {
  require_float("softmax: x", x.dtype);
  require_rank1("softmax", x);
  RowsParams p;
  p.cols = x.shape.back();
  p.rows = shape_rows(x.shape);  // cols = 0: an empty output, softmax over nothing is nothing
  p.out_dtype = x.dtype;
  return p;
}

}  // namespace mto
