// Op declarations shared by every backend: operands, parameters, and the shape/dtype rules.
// Each check_* validates its inputs (throwing mto::Error with a message that names the argument,
// the value and what is accepted) and returns the parameters the backends run with.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "tensor.h"

namespace mto {

// An operand of linear/matmul/attention: exactly one of dense / quant is set.
struct Operand {
  const Tensor* dense = nullptr;
  const QTensor* quant = nullptr;
  const Shape& shape() const { return dense ? dense->shape : quant->shape; }
};

// y[M, N] = x[M, K] @ w[N, K]^T (+ bias[N]); x's leading dims are folded into M.
struct LinearParams {
  int64_t M = 0, N = 0, K = 0;
  Shape out_shape;  // x.shape[:-1] + [N]; moved into y when queued (addon/ops.cc): read y.shape
  DType out_dtype = DType::Float32;
  // x may be quantized to int8 per block of 32 (linear's `activations: 'int8'`): backends with
  // integer dot-product kernels for w's format do for a few rows of x (cpu: kernels/dot.h
  // dot_q8_kernels); the others compute in float as usual.
  bool int8_activations = false;
};
LinearParams check_linear(const Operand& x, const Operand& w, const Tensor* bias,
                          std::optional<DType> out_dtype);

// c[batch, M, N] = a[batch, M, K] @ b[K, N] (b shared by every batch) or b[batch, K, N].
struct MatmulParams {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  bool b_batched = false;
  Shape out_shape;  // moved into c when queued (addon/ops.cc): read c.shape
  DType out_dtype = DType::Float32;
};
MatmulParams check_matmul(const Tensor& a, const Tensor& b);

// o[B, Hq, Lq, D] = softmax(q k^T * scale + mask) v, FlashAttention as in docs/design/API.md.
// NaN and inf, identical on every backend and kernel: a key that query row i does not see (hidden
// by causal, a false bool mask or an additive -inf: any score of -inf) is never read, so a NaN in
// its K or V changes nothing (unlike PyTorch's math path, where NaN + -inf and 0 * NaN are NaN;
// FlashAttention kernels skip hidden tiles, so only this rule is tile-independent). Over the keys
// row i sees, plain float arithmetic (PyTorch's math path in float): a NaN in q row i, in a seen
// K row, or in the additive mask of a seen key makes row i all NaN, and so does a +inf score
// (exp(inf - inf)); a NaN in V[j][c] makes o[i][c] NaN for every row i that sees key j, even when
// its weight rounds to 0 (0 * NaN = NaN); an inf in V gives inf, or NaN where +inf meets -inf or a
// zero weight (not pinned down: whether a weight reaches 0 in the online rescale depends on the
// kernel's exp2; the simdgroup-tier prefill keeps the inf). An mxfp8 block with scale byte 0xFF (or a NaN code) decodes to NaN and counts as
// NaN. A row that sees no key is zeros, whatever its q holds.
struct AttentionParams {
  int64_t B = 0, Hq = 0, Hkv = 0, Lq = 0, Lk = 0, D = 0;
  float scale = 0.f;
  bool causal = false;          // bottom-right aligned: query i sees keys j <= i + (Lk - Lq)
  const Tensor* mask = nullptr; // bool (true = attend) or additive float, broadcast to [B,Hq,Lq,Lk]
  int64_t mask_stride[4] = {0, 0, 0, 0};  // element strides of mask over (b, h, i, j); 0 = broadcast
  // Attention sinks (gpt-oss): float32 [Hq], one logit per query head that joins each row's softmax
  // denominator with no value (o = sum_j e^(s_j - M) v_j / (sum_j e^(s_j - M) + e^(sink - M))), in
  // the scaled-score domain. A NaN (or +inf) sink makes its head's rows NaN, -inf is no sink; a row
  // that sees no key is still zeros.
  const Tensor* sinks = nullptr;
  DType out_dtype = DType::Float32;
  Shape out_shape;  // moved into o when queued (addon/ops.cc): read o.shape
};
AttentionParams check_attention(const Operand& q, const Operand& k, const Operand& v,
                                std::optional<float> scale, bool causal, const Tensor* mask,
                                const Tensor* sinks = nullptr);

// Validates a quantization request for a dense tensor of `shape`.
void check_quantize(const Shape& shape, Format f, int block);


// Throws Error(E_DTYPE) unless t is float32, float16 or bfloat16; `arg` names the argument in the
// message ("x", or "rmsNorm: x").
void require_float(const std::string& arg, DType t);

// ---- The op set a model needs (docs/design/API.md, 0.2). Float inputs of any float dtype are
// read as float32, computed in float32 and written in the output dtype (round to nearest-even).

// NumPy broadcasting of a and b to one output shape, as element strides per output dimension (0
// where an operand repeats), adjacent dimensions merged where both operands allow it (so most
// calls are one contiguous run, or rows against one broadcast row).
struct Broadcast {
  Shape out_shape;                    // the full output shape
  Shape dims;                         // the merged iteration shape (innermost last)
  std::vector<int64_t> a_strides, b_strides;  // per merged dimension
};
Broadcast broadcast_shapes(const char* a_name, const Shape& a, const char* b_name, const Shape& b);

enum class UnaryOp : uint8_t { Silu, Gelu, GeluTanh };
// Swiglu(gate, up) = silu(gate) * up. SwigluOai (gpt-oss; llama.cpp's swiglu_oai): with
// g = min(gate, limit), u = clamp(up, -limit, limit): g * sigmoid(alpha g) * (u + 1); a NaN gate
// or up stays NaN (the clamps keep it), limit = +inf clamps nothing.
enum class BinaryOp : uint8_t { Add, Mul, Swiglu, SwigluOai };
struct ElementwiseParams {
  Broadcast bc;  // for unary ops: both operands x, no broadcast
  DType out_dtype = DType::Float32;
  float alpha = 1.f;  // SwigluOai
  float limit = std::numeric_limits<float>::infinity();  // SwigluOai: > 0
};
// Float dtypes only; the output has the inputs' dtype when they agree, else float32 (as
// PyTorch's promotion of float16 with bfloat16).
ElementwiseParams check_unary(const char* op, const Tensor& x);
ElementwiseParams check_binary(const char* op, const Tensor& a, const Tensor& b);
// check_binary of swiglu, plus SwigluOai's alpha (finite, > 0) and limit (> 0, +inf allowed).
ElementwiseParams check_swiglu_oai(const Tensor& gate, const Tensor& up, double alpha, double limit);

// rmsNorm / layerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * weight + bias
// (rmsNorm: no mean, var = mean of squares, no bias). weight and bias [cols], any float dtype.
struct NormParams {
  int64_t rows = 0, cols = 0;
  float eps = 1e-5f;
  bool layer = false;  // layerNorm
  DType out_dtype = DType::Float32;
};
NormParams check_norm(bool layer, const Tensor& x, const Tensor* weight, const Tensor* bias, double eps);

// RoPE on x [B, H, L, D] (blhd: [B, L, H, D]): row l has position offset + l or positions[l]
// (int32 [L]); feature pairs (i, i + dims/2) (neox) or (2i, 2i + 1) (interleaved), i < dims/2,
// rotate by pos * base^(-2i/dims) or pos * freqs[i] (float32 [dims/2]); features >= dims pass.
// D = 0 (an empty x): dims defaults to 0.
struct RopeParams {
  int64_t B = 0, H = 0, L = 0, D = 0, dims = 0;
  bool blhd = false, neox = true;
  double base = 10000;
  int64_t offset = 0;
  bool has_positions = false, has_freqs = false;
  DType out_dtype = DType::Float32;
};
RopeParams check_rope(const Tensor& x, const Tensor* positions, const Tensor* freqs, bool blhd,
                      bool neox, double base, int64_t offset, std::optional<int64_t> dims);

// softmax over the last axis: rows x cols.
struct RowsParams {
  int64_t rows = 0, cols = 0;
  DType out_dtype = DType::Float32;
};
RowsParams check_softmax(const Tensor& x);

// A strided copy of one dense tensor into (part of) another of the same dtype: element idx of
// the iteration shape goes from src[src_offset + idx . src_strides] to dst[dst_offset + idx .
// dst_strides]. transpose, slice, concat (one part per input) and write are such copies.
struct CopyPart {
  Shape dims;
  std::vector<int64_t> src_strides, dst_strides;
  int64_t src_offset = 0, dst_offset = 0;
};
// The parts of each layout op; `out_shape` is set for the ops that make a new tensor.
std::vector<CopyPart> plan_transpose(const Tensor& x, const std::vector<int64_t>& perm, Shape* out_shape);
std::vector<CopyPart> plan_slice(const Tensor& x, int64_t axis, int64_t start, int64_t end, Shape* out_shape);
std::vector<CopyPart> plan_concat(const std::vector<const Tensor*>& xs, int64_t axis, Shape* out_shape);
std::vector<CopyPart> plan_write(const Tensor& dst, const Tensor& src, int64_t axis, int64_t offset);

// argmax, topK and sample over the last axis of a float x [..., V] (rows x cols). NaN counts as
// larger than every number (PyTorch's argmax and topk); ties go to the lower index. V = 0 is
// E_SHAPE (nothing to pick, as PyTorch's argmax of an empty dimension); zero rows are fine.
struct PickParams {
  int64_t rows = 0, cols = 0;
  int64_t k = 1;             // topK: values and ids [..., k], largest first
  Shape out_shape;           // argmax, sample: x.shape[:-1] ([1] for a vector); topK: [..., k]
  DType values_dtype = DType::Float32;
  // sample: softmax(x / temperature) over the top_k largest (0: all) whose cumulative probability
  // reaches top_p (the smallest such set, largest first), then one draw per row from a uniform
  // number that depends only on (seed, row): the same ids on every backend and run.
  double temperature = 1.0;  // 0: argmax
  int64_t top_k = 0;
  double top_p = 1.0;
  uint64_t seed = 0;
};
PickParams check_pick(const char* op, const Tensor& x, int64_t k);
// The uniform number in [0, 1) of row `row` for `seed` (sample's draw; exported for tests).
double sample_uniform(uint64_t seed, int64_t row);
// sample's integer weights (shaders/pick_sample.h, the same on every backend) take log2(e) /
// temperature as a float and top_p as round(top_p * 2^32), both computed here once per op.
float sample_log2e_over_t(double temperature);
uint64_t sample_top_p_q32(double top_p);

// embedding: rows of a table [V, D] (dense, or quantized in any format) picked by int32 ids of
// any shape -> [...ids.shape, D], in the table's dtype (float32 for a quantized table). An id
// outside [0, V) fails the op when it runs (E_ARG naming the id and where it was).
struct EmbeddingParams {
  int64_t vocab = 0, dim = 0, count = 0;
  Shape out_shape;
  DType out_dtype = DType::Float32;
};
EmbeddingParams check_embedding(const Operand& table, const Tensor& ids);

// groupedLinear: y[T, N] where rows [o_e, o_e + g_e) of x [T, K] use expert e of w [E, N, K]
// (o_e = g_0 + ... + g_{e-1}), g = group_sizes, int32 [E], read when the op runs: sizes that
// are negative or do not add up to T fail the op (E_ARG).
struct GroupedLinearParams {
  int64_t T = 0, E = 0, N = 0, K = 0;
  Shape out_shape;
  DType out_dtype = DType::Float32;
  bool int8_activations = false;  // as LinearParams'
};
GroupedLinearParams check_grouped_linear(const Operand& x, const Operand& w, const Tensor& group_sizes,
                                         std::optional<DType> out_dtype);

// groupRows: the entries of ids [T, k] (or [T]: k = 1), int32 in [0, groups), stably sorted by
// value (a counting sort): sizes [groups] (entries per value), rows [T * k] (the row t of ids of
// each entry in sorted order), positions (ids' shape: where each entry went). What a mixture of
// experts needs to run its tokens grouped by expert (groupedLinear) and put them back.
struct GroupRowsParams {
  int64_t rows = 0, k = 1, groups = 0;
};
GroupRowsParams check_group_rows(const Tensor& ids, int64_t groups);

// What embedding and groupedLinear read when they run, checked on the host (E_ARG with the
// messages of the Metal kernels' status): by the cpu kernels and by the host step of an op with
// nothing for a kernel to do. An id outside [0, V); a group size < 0 or sizes not adding up to T.
void check_embedding_ids(const Tensor& ids, const EmbeddingParams& p);
void check_group_sizes(const Tensor& group_sizes, const GroupedLinearParams& p);
void check_group_ids(const Tensor& ids, const GroupRowsParams& p);  // groupRows: ids in [0, groups)

// ---- Empty dimensions (README "The ops of a model"). A dimension may be 0 anywhere. An op whose
// output has no elements runs no kernel on any backend: the addon queues a host step in its place,
// in stream order, failing as the op would with a failed input. An op that reduces over nothing
// into an output that is not empty writes that output on the host, with these:
// Zeros: linear without bias, matmul and groupedLinear with K = 0 (a sum over nothing, as PyTorch),
// and attention with Lk = 0 (a row that sees no key is zeros, as PyTorch's math path gives over
// zero keys; some fused SDPA kernels give NaN there).
void fill_zeros(Tensor& out);
// linear with K = 0: y[..., n] = bias[n] in y's dtype (zeros without a bias), as PyTorch's addmm.
void fill_bias_rows(const Tensor* bias, Tensor& y);

}  // namespace mto
