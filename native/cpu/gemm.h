// The cpu backend's matrix-product core, shared by linear.cc and matmul.cc.
//
// C = A @ B (+ bias) in float32. A arrives as float32 rows; B arrives through a source that writes
// packed float32 panels, so any B (dense float32/float16/bfloat16, transposed or not, quantized)
// is converted or decoded once per panel into the layout the micro-kernel streams, and the kernel
// itself knows only float32. For few rows of A (decode-time linear, vector-matrix matmul) gemv_t
// and gemv_n stream each row of W = B^T (or of B) once instead of packing, because that case is
// bound by memory bandwidth, not arithmetic.
#pragma once
#include <cstdint>

#include "../core/tensor.h"
#include "thread_pool.h"

namespace mto::cpu {

// Width of a packed B panel strip: the columns of C the widest micro-kernel (AVX-512, 2 zmm)
// produces per call; narrower ISAs take a strip in slices.
constexpr int kPanelWidth = 32;
// The depth of one packed panel, and the k-chunk of gemv_t: a multiple of every quantization
// block (32/64/128), so sources of quantized rows are always asked for whole blocks.
constexpr int64_t kDepthBlock = 256;

// Supplies B[K, N] as packed panels.
class PanelSource {
 public:
  virtual ~PanelSource() = default;
  // Writes B[k0 : k0+kc, n0 : n0+nc] of batch `b` into dst as ceil(nc / kPanelWidth) strips; strip
  // s holds kc groups of kPanelWidth floats, group k being B[k0+k, n0 + s*kPanelWidth + j] for
  // j < kPanelWidth, with 0 for columns at or past n0+nc. k0 is a multiple of kDepthBlock,
  // kc <= kDepthBlock, and k0+kc is a multiple too or equals K. Called concurrently from several
  // threads.
  virtual void pack(int64_t b, int64_t n0, int64_t nc, int64_t k0, int64_t kc,
                    float* dst) const = 0;
};

// Supplies rows of a row-major matrix as float32 spans: rows of W = B^T for gemm/gemv_t (linear's
// weights w[N, K]), rows of B for gemv_n (matmul's b[K, N]).
class RowSpanSource {
 public:
  virtual ~RowSpanSource() = default;
  // Returns row[begin:end) as float32: a pointer into the matrix when it is float32 already, else
  // `scratch` (room for end - begin floats) after converting or decoding into it. For W rows,
  // begin is a multiple of kDepthBlock and end is one too or the row's end (so quantized rows are
  // asked for whole blocks). Called concurrently from several threads.
  virtual const float* span(int64_t row, int64_t begin, int64_t end, float* scratch) const = 0;
  // Where row[begin] lies when the rows are float32 in memory already (span() would return it),
  // else null: lets a packer prefetch the rows it will read next.
  virtual const float* in_place(int64_t row, int64_t begin) const {
    (void)row; (void)begin;
    return nullptr;
  }
};

// Rows of a dense row-major matrix [rows, width] of any float dtype (float32 rows are read in
// place; float16/bfloat16 rows are converted into the scratch).
class DenseRows final : public RowSpanSource {
 public:
  DenseRows(const Tensor& t, int64_t width)
      : bytes_(static_cast<const uint8_t*>(t.buffer->data())), dtype_(t.dtype), width_(width) {}
  const float* span(int64_t row, int64_t begin, int64_t end, float* scratch) const override {
    const size_t offset = size_t(row * width_ + begin);
    if (dtype_ == DType::Float32) return reinterpret_cast<const float*>(bytes_) + offset;
    to_float32(dtype_, bytes_ + offset * dtype_size(dtype_), scratch, size_t(end - begin));
    return scratch;
  }
  const float* in_place(int64_t row, int64_t begin) const override {
    if (dtype_ != DType::Float32) return nullptr;
    return reinterpret_cast<const float*>(bytes_) + size_t(row * width_ + begin);
  }

 private:
  const uint8_t* bytes_;
  DType dtype_;
  int64_t width_;
};

// Packs panels of B = W^T from a RowSpanSource: each weight row span is decoded once per panel
// (gemm_packed.cc).
class TransposedPanels final : public PanelSource {
 public:
  explicit TransposedPanels(const RowSpanSource& rows) : rows_(rows) {}
  void pack(int64_t b, int64_t n0, int64_t nc, int64_t k0, int64_t kc, float* dst) const override;

 private:
  const RowSpanSource& rows_;
};

// C[b] (M x N, row stride ldc) = A[b] (M x K, row stride lda) @ B[b] (+ bias[N]) for b < batch
// (gemm_packed.cc).
struct GemmArgs {
  int64_t batch = 1, M = 0, N = 0, K = 0;
  const float* a = nullptr;
  int64_t lda = 0, a_batch_stride = 0;
  float* c = nullptr;
  int64_t ldc = 0, c_batch_stride = 0;
  const float* bias = nullptr;  // float32 [N] or null
};
void gemm(ThreadPool& pool, const GemmArgs& g, const PanelSource& b);

// Up to this many rows of A, linear uses gemv_t and matmul gemv_n instead of gemm.
constexpr int64_t kGemvMaxRows = 8;

// C[M, N] = A[M, K] @ W^T (+ bias[N]): every W row span is fetched (decoded) once and dotted with
// each row of A while it is in L1. Any M works; beyond kGemvMaxRows gemm is faster.
void gemv_t(ThreadPool& pool, int64_t M, int64_t N, int64_t K, const float* a, int64_t lda,
            const RowSpanSource& w, const float* bias, float* c, int64_t ldc);

// C[b] = A[b] @ B[b] (+ bias) with B row-major, for few rows of A (matmul's small-M case): no
// packing; every row of B streams through once, in long contiguous runs, while the rows of C
// accumulate in L1. Row k of B[b] is b_rows.span(b * b_batch_rows + k, n0, n1, scratch)
// (b_batch_rows = 0: every batch shares B).
void gemv_n(ThreadPool& pool, const GemmArgs& g, const RowSpanSource& b_rows,
            int64_t b_batch_rows);

// Which kernels run: chosen once from the CPU (x86-64: AVX-512, else AVX2+FMA, else the baseline;
// core/cpu_features.h); the environment variable METAL_TENSOROPS_CPU_ISA=baseline|avx2|avx512 caps it.
enum class GemmIsa { Baseline = 0, Avx2 = 1, Avx512 = 2 };
GemmIsa gemm_isa();
// Tests and benchmarks: select kernels (capped at what this CPU supports); returns the ISA used.
GemmIsa set_gemm_isa(GemmIsa isa);
const char* gemm_isa_name(GemmIsa isa);

}  // namespace mto::cpu
