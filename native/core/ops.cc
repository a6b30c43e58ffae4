// Shape and dtype rules of every op. Messages name the argument, the value received and what is
// accepted, because they reach users verbatim as TensorOpsError messages.
#include "ops.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "error.h"

namespace mto {
void require_float(const std::string& arg, DType t) {
  if (!is_float(t)) {
    throw Error(code::DType, arg + " has dtype '" + dtype_name(t) + "'; accepted: 'float32', 'float16', 'bfloat16'");
  }
}

namespace {

std::string dims(const Shape& s) { return shape_string(s); }

void require_dense_float(const char* arg, const Operand& o) {
  if (o.dense) require_float(arg, o.dense->dtype);
}

void require_rank(const char* arg, const Shape& s, size_t rank, const char* layout) {
  if (s.size() != rank) {
    throw Error(code::Shape, std::string(arg) + " must have rank " + std::to_string(rank) + " " +
                                 layout + "; got shape " + dims(s));
  }
}

}  // namespace

LinearParams check_linear(const Operand& x, const Operand& w, const Tensor* bias,
                          std::optional<DType> out_dtype) {
  require_dense_float("x", x);
  require_dense_float("w", w);
  const Shape& xs = x.shape();
  const Shape& ws = w.shape();
  if (xs.empty()) throw Error(code::Shape, "x must have rank >= 1 ([..., K]); got a scalar");
  require_rank("w", ws, 2, "[N, K]");
  LinearParams p;
  p.K = xs.back();
  p.N = ws[0];
  if (ws[1] != p.K) {
    throw Error(code::Shape, "w's last dimension must equal x's last dimension K=" +
                                 std::to_string(p.K) + "; got w shape " + dims(ws) +
                                 " for x shape " + dims(xs));
  }
  p.M = shape_rows(xs);
  p.out_shape = Shape(xs.begin(), xs.end());  // the last dimension becomes N
  p.out_shape.back() = p.N;
  if (bias) {
    require_float("bias", bias->dtype);
    if (bias->shape.size() != 1 || bias->shape[0] != p.N) {
      throw Error(code::Shape, "bias must have shape [N] = [" + std::to_string(p.N) + "]; got " +
                                   dims(bias->shape));
    }
  }
  p.out_dtype = out_dtype ? *out_dtype : (x.dense ? x.dense->dtype : DType::Float32);
  require_float("outDtype", p.out_dtype);
  return p;
}

MatmulParams check_matmul(const Tensor& a, const Tensor& b) {
  require_float("a", a.dtype);
  require_float("b", b.dtype);
  if (a.shape.size() < 2) {
    throw Error(code::Shape, "a must have rank >= 2 ([..., M, K]); got shape " + dims(a.shape));
  }
  MatmulParams p;
  const size_t r = a.shape.size();
  p.M = a.shape[r - 2];
  p.K = a.shape[r - 1];
  p.batch = 1;
  for (size_t i = 0; i + 2 < r; ++i) p.batch *= a.shape[i];
  if (b.shape.size() == 2) {
    p.b_batched = false;
  } else if (b.shape.size() == r &&
             Shape(b.shape.begin(), b.shape.end() - 2) == Shape(a.shape.begin(), a.shape.end() - 2)) {
    p.b_batched = true;
  } else {
    throw Error(code::Shape, "b must have shape [K, N] or a's batch dimensions + [K, N]; got " +
                                 dims(b.shape) + " for a shape " + dims(a.shape));
  }
  const size_t rb = b.shape.size();
  if (b.shape[rb - 2] != p.K) {
    throw Error(code::Shape, "b's dimension -2 must equal a's last dimension K=" +
                                 std::to_string(p.K) + "; got b shape " + dims(b.shape));
  }
  p.N = b.shape[rb - 1];
  p.out_shape = Shape(a.shape.begin(), a.shape.end());  // the last dimension becomes N
  p.out_shape.back() = p.N;
  p.out_dtype = a.dtype;
  return p;
}

AttentionParams check_attention(const Operand& q, const Operand& k, const Operand& v,
                                std::optional<float> scale, bool causal, const Tensor* mask,
                                const Tensor* sinks) {
  if (!q.dense) throw Error(code::DType, "q must be a dense Tensor; got a QuantizedTensor");
  require_dense_float("q", q);
  require_dense_float("k", k);
  require_dense_float("v", v);
  for (const auto* kv : {&k, &v}) {
    if (kv->quant && kv->quant->format != Format::MXFP8_E4M3 &&
        kv->quant->format != Format::MXFP8_E5M2) {
      throw Error(code::Format, std::string(kv == &k ? "k" : "v") + " is quantized as '" +
                                    format_info(kv->quant->format).name +
                                    "'; accepted for attention: 'mxfp8', 'mxfp8_e5m2'");
    }
  }
  const Shape &qs = q.shape(), &ks = k.shape(), &vs = v.shape();
  require_rank("q", qs, 4, "[B, Hq, Lq, D]");
  require_rank("k", ks, 4, "[B, Hkv, Lk, D]");
  require_rank("v", vs, 4, "[B, Hkv, Lk, D]");
  AttentionParams p;
  p.B = qs[0]; p.Hq = qs[1]; p.Lq = qs[2]; p.D = qs[3];
  p.Hkv = ks[1]; p.Lk = ks[2];
  if (ks != vs) {
    throw Error(code::Shape, "k and v must have the same shape [B, Hkv, Lk, D]; got k " +
                                 dims(ks) + " and v " + dims(vs));
  }
  if (ks[0] != p.B || ks[3] != p.D) {
    throw Error(code::Shape, "k must match q in B and D (q " + dims(qs) + "); got k " + dims(ks));
  }
  // Hkv = 0 divides only Hq = 0 (0 = 0 * anything); an empty batch of heads is then fine.
  if (p.Hkv == 0 ? p.Hq != 0 : p.Hq % p.Hkv != 0) {
    throw Error(code::Shape, "q's heads Hq=" + std::to_string(p.Hq) +
                                 " must be a multiple of k/v's heads Hkv=" +
                                 std::to_string(p.Hkv));
  }
  if (scale) {
    if (!std::isfinite(*scale)) {
      throw Error(code::Arg, "scale must be a finite number; got " + std::to_string(*scale));
    }
    p.scale = *scale;
  } else {
    p.scale = p.D > 0 ? float(1.0 / std::sqrt(double(p.D))) : 1.f;  // D = 0: o is empty
  }
  p.causal = causal;
  if (mask) {
    if (mask->dtype == DType::Int32) {
      throw Error(code::DType, "mask has dtype 'int32'; accepted: 'bool' (true = attend) or a float dtype (added to the scores)");
    }
    const Shape& ms = mask->shape;
    const int64_t target[4] = {p.B, p.Hq, p.Lq, p.Lk};
    if (ms.empty() || ms.size() > 4) {
      throw Error(code::Shape, "mask must have rank 1 to 4, broadcastable to [B, Hq, Lq, Lk] = " +
                                   dims(Shape(target, target + 4)) + "; got " + dims(ms));
    }
    int64_t stride = 1;
    for (int d = 3; d >= 0; --d) {
      const int md = int(ms.size()) - 4 + d;  // right-aligned broadcast, as NumPy
      const int64_t extent = md >= 0 ? ms[md] : 1;
      if (extent != 1 && extent != target[d]) {
        throw Error(code::Shape, "mask shape " + dims(ms) +
                                     " does not broadcast to [B, Hq, Lq, Lk] = " +
                                     dims(Shape(target, target + 4)));
      }
      p.mask_stride[d] = extent == 1 ? 0 : stride;
      stride *= extent;
    }
    p.mask = mask;
  }
  if (sinks) {
    if (sinks->dtype != DType::Float32) {
      throw Error(code::DType, std::string("sinks has dtype '") + dtype_name(sinks->dtype) +
                                   "'; accepted: 'float32'");
    }
    if (sinks->shape.size() != 1 || sinks->shape[0] != p.Hq) {
      throw Error(code::Shape, "sinks must have shape [Hq] = [" + std::to_string(p.Hq) +
                                   "] (one logit per query head); got " + dims(sinks->shape));
    }
    p.sinks = sinks;
  }
  p.out_dtype = q.dense->dtype;
  p.out_shape = qs;
  return p;
}

void check_quantize(const Shape& shape, Format f, int block) {
  if (!is_valid_block(f, block)) {
    throw Error(code::Arg, std::string("blockSize ") + std::to_string(block) +
                               " is not accepted for format '" + format_info(f).name + "'; " +
                               (format_info(f).affine ? "accepted: 32, 64, 128" : "accepted: 32"));
  }
  if (shape.empty()) throw Error(code::Shape, "a scalar cannot be quantized; give shape [..., K]");
  if (shape.back() % block != 0) {
    throw Error(code::Shape, "the last dimension (" + std::to_string(shape.back()) +
                                 ") must be a multiple of the block size " +
                                 std::to_string(block) + "; got shape " + dims(shape));
  }
}

void fill_zeros(Tensor& out) {
  if (out.bytes()) std::memset(out.buffer->data(), 0, out.bytes());  // +0 in every dtype
}

void fill_bias_rows(const Tensor* bias, Tensor& y) {
  if (!bias || y.numel() == 0) {
    fill_zeros(y);
    return;
  }
  const int64_t N = y.shape.back(), rows = shape_rows(y.shape);
  std::vector<float> b(static_cast<size_t>(N));
  to_float32(bias->dtype, bias->buffer->data(), b.data(), size_t(N));
  const size_t row_bytes = size_t(N) * dtype_size(y.dtype);
  auto* out = static_cast<uint8_t*>(y.buffer->data());
  from_float32(y.dtype, b.data(), out, size_t(N));  // one conversion (round to nearest-even), then copies
  for (int64_t r = 1; r < rows; ++r) std::memcpy(out + size_t(r) * row_bytes, out, row_bytes);
}

}  // namespace mto
