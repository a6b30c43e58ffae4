// Runs the cpu backend's kernels without Node, so that the same checks run on every build of them:
// natively on x86-64 (under each METAL_TENSOROPS_CPU_ISA) and cross-compiled for arm64 under
// qemu-user, which is how the NEON paths are exercised on these x86-64 machines.
//
//   cpu_kernels_check check         linear / matmul / attention against float64 references
//                                   computed here from the scalar element codec, and the thread
//                                   pool (thread_pool_check.cc); prints the ISA paths taken, one
//                                   line per case, exit 1 on any failure.
//   cpu_kernels_check dump FILE     writes the bytes of quantize (every format, special values
//                                   included) and of the float16 / bfloat16 conversions, which must
//                                   be identical on every platform: test/native-cpu.test.ts compares
//                                   the arm64 dump with the x86-64 one (itself oracle-tested).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "core/cpu_features.h"
#include "core/portable.h"
#include "core/error.h"
#include "cpu/gemm.h"
#include "cpu/ops.h"
#include "kernels/decode.h"
#include "kernels/dot.h"
#include "thread_pool_check.h"

using namespace mto;

namespace {

// Deterministic values in [-1, 1) (xorshift), the same on every platform.
struct Rng {
  uint64_t s;
  explicit Rng(uint64_t seed) : s(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {
    s ^= s << 13; s ^= s >> 7; s ^= s << 17;
    return float(int64_t(s >> 40) - (int64_t(1) << 23)) / float(1 << 23);
  }
};

TensorPtr dense(const Shape& shape, DType dt, Rng& rng, float amp = 1.f) {
  auto t = std::make_shared<Tensor>();
  t->shape = shape;
  t->dtype = dt;
  t->buffer = make_buffer(t->bytes());
  std::vector<float> v(size_t(t->numel()));
  for (auto& e : v) e = amp * rng.next();
  from_float32(dt, v.data(), t->buffer->data(), v.size());
  return t;
}

std::vector<double> as_double(const Tensor& t) {
  std::vector<float> f(size_t(t.numel()));
  to_float32(t.dtype, t.buffer->data(), f.data(), f.size());
  return {f.begin(), f.end()};
}

// Dequantizes by the scalar element codec and docs/design/API.md's block scale rule, independent of
// dequantize_span and the vector decoders the kernels use.
std::vector<double> reference_dequant(const QTensor& q) {
  const QuantView v = q.view();
  const FormatInfo& fi = format_info(v.format);
  std::vector<double> out(size_t(v.rows * v.cols));
  const size_t row_bytes = row_code_bytes(v.format, v.cols);
  const int64_t groups = v.cols / v.block;
  for (int64_t r = 0; r < v.rows; ++r) {
    for (int64_t k = 0; k < v.cols; ++k) {
      const int64_t bit = k * fi.bits;
      const uint8_t* p = v.codes + r * row_bytes + bit / 8;
      const unsigned word = unsigned(p[0]) | (bit % 8 + fi.bits > 8 ? unsigned(p[1]) << 8 : 0u);
      const uint8_t code = uint8_t((word >> (bit % 8)) & ((1u << fi.bits) - 1));
      const int64_t g = r * groups + k / v.block;
      double w;
      if (fi.affine) {
        const double s = half_to_float(static_cast<const uint16_t*>(v.scales)[g]);
        w = s * code + half_to_float(v.biases[g]);
      } else {
        const uint8_t e = static_cast<const uint8_t*>(v.scales)[g];
        w = e == 0xFF ? NAN : std::ldexp(double(decode_element(fi.element, code)), int(e) - 127);
      }
      out[size_t(r * v.cols + k)] = w;
    }
  }
  return out;
}

int failures = 0;

// |got - ref| <= tol * (1 + |ref|) everywhere; one line per case.
void report(const std::string& name, const float* got, const std::vector<double>& ref, double tol) {
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(got[i] - ref[i]) / (1 + std::fabs(ref[i]));
    if (!(err <= worst)) { worst = err; at = i; }
  }
  const bool ok = worst <= tol;
  if (!ok) ++failures;
  std::printf("%s %s (max rel err %.3g at %zu, tol %.1g)\n", ok ? "ok" : "FAIL", name.c_str(),
              worst, at, tol);
}

// a b in float64, a [M, K] row-major, b [K, N] row-major or (b_is_nk, linear's w) [N, K].
std::vector<double> product_reference(const std::vector<double>& a, const std::vector<double>& b,
                                      int64_t M, int64_t N, int64_t K, bool b_is_nk) {
  const int64_t sk = b_is_nk ? 1 : N, sn = b_is_nk ? K : 1;
  std::vector<double> ref(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += a[size_t(m * K + k)] * b[size_t(k * sk + n * sn)];
      ref[size_t(m * N + n)] = s;
    }
  return ref;
}

// The cpu backend's linear of x and w, without bias.
std::vector<float> run_linear(cpu::ThreadPool& pool, const Operand& xo, const Operand& wo) {
  const LinearParams p = check_linear(xo, wo, nullptr, std::nullopt);
  std::vector<float> y(size_t(p.M * p.N));
  cpu::linear(pool, xo, wo, nullptr, p, y.data());
  return y;
}

void check_linear(cpu::ThreadPool& pool, Rng& rng) {
  const Format formats[] = {Format::MXFP8_E4M3, Format::MXFP8_E5M2, Format::MXFP6_E3M2,
                            Format::MXFP6_E2M3, Format::MXFP4,      Format::MXINT8,
                            Format::MXINT4,     Format::MXINT2,     Format::AFFINE4,
                            Format::AFFINE8};
  const int64_t Ms[] = {1, 3, 8, 9, 33};
  for (Format f : formats) {
    for (int64_t M : Ms) {
      // K: whole 128-code steps, and for MX an odd number of blocks besides (M = 1, 3, 9, 33).
      const bool mx = !format_info(f).affine;
      const int64_t N = 37 + M, K = 128 * (1 + M % 3) + (mx ? 32 * (M % 2) : 0);
      // Affine groups of 32, 64 and 128 (MX blocks are always 32).
      const int block = mx ? 32 : M == 9 ? 64 : M == 33 ? 128 : 32;
      TensorPtr wf = dense({N, K}, DType::Float32, rng);
      QTensorPtr w = make_qtensor({N, K}, f, block);
      cpu::quantize(pool, *wf, *w);
      TensorPtr x = dense({M, K}, DType::Float32, rng);
      const std::vector<double> ref = product_reference(as_double(*x), reference_dequant(*w), M, N, K, true);
      const std::vector<float> y = run_linear(pool, {x.get(), nullptr}, {nullptr, w.get()});
      report("linear " + std::string(format_info(f).name) + " M=" + std::to_string(M) + " N=" +
                 std::to_string(N) + " K=" + std::to_string(K),
             y.data(), ref, 2e-5);
    }
  }
}

// linear with int8 activations (LinearParams::int8_activations): against x quantized by the rule
// docs/design/API.md states, written here again (float32 d = max|x| / 127, codes rounded half to
// even from x * (127 / max|x|)), times the float64 weights; where this build has no integer
// kernels (dot_q8_kernels() null) the float32 path's reference instead.
std::vector<double> int8_rule(const Tensor& x) {
  std::vector<double> out(size_t(x.numel()));
  const float* v = x.data<float>();
  for (size_t b = 0; b < out.size(); b += 32) {
    float amax = 0;
    for (size_t i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(v[b + i]));
    const float d = amax / 127.0f, id = amax > 0 ? 127.0f / amax : 0.0f;
    for (size_t i = 0; i < 32; ++i) out[b + i] = double(d) * std::nearbyint(v[b + i] * id);
  }
  return out;
}

void check_linear_int8(cpu::ThreadPool& pool, Rng& rng) {
  const kernels::DotKernels* q8 = kernels::dot_q8_kernels();
  std::printf("q8: %s\n", q8 ? q8->name : "none");
  const Format formats[] = {Format::MXFP4, Format::MXINT4, Format::MXINT8, Format::AFFINE4, Format::AFFINE8};
  for (Format f : formats) {
    for (int64_t M : {1, 3, 8}) {
      const int64_t N = 37 + M, K = 32 * (9 + 2 * M);  // an odd number of blocks
      const int block = format_info(f).affine && M == 8 ? 64 : 32;
      const int64_t Kb = K / block * block;
      TensorPtr wf = dense({N, Kb}, DType::Float32, rng);
      QTensorPtr w = make_qtensor({N, Kb}, f, block);
      cpu::quantize(pool, *wf, *w);
      TensorPtr x = dense({M, Kb}, DType::Float32, rng);
      LinearParams p = mto::check_linear({x.get(), nullptr}, {nullptr, w.get()}, nullptr, std::nullopt);
      p.int8_activations = true;
      std::vector<float> y(size_t(M * N));
      cpu::linear(pool, {x.get(), nullptr}, {nullptr, w.get()}, nullptr, p, y.data());
      const std::vector<double> ref = product_reference(q8 ? int8_rule(*x) : as_double(*x), reference_dequant(*w), M, N, Kb, true);
      report("linear int8 activations " + std::string(format_info(f).name) + " M=" + std::to_string(M) + " N=" +
                 std::to_string(N) + " K=" + std::to_string(Kb),
             y.data(), ref, 2e-5);
    }
  }
}

// y = x w^T for quantized w whose rows nan_row(n) must come out NaN (all others finite), judged
// against float64 relative to the sum of |x w| (sums here may be far below 1, where an absolute
// floor would hide errors). One line; counts a failure.
template <class NanRow>
void check_nan_rows(cpu::ThreadPool& pool, const std::string& name, const Tensor& x, const QTensor& w,
                    NanRow nan_row) {
  const int64_t M = x.shape[0], N = w.rows(), K = w.cols();
  std::vector<double> xd = as_double(x), wd = reference_dequant(w);
  const std::vector<double> ref = product_reference(xd, wd, M, N, K, true);
  for (double& v : xd) v = std::fabs(v);
  for (double& v : wd) v = std::fabs(v);
  const std::vector<double> mag = product_reference(xd, wd, M, N, K, true);
  const std::vector<float> y = run_linear(pool, {&x, nullptr}, {nullptr, &w});
  int bad = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      const size_t i = size_t(m * N + n);
      const bool ok = std::isnan(ref[i]) ? std::isnan(y[i]) : std::fabs(y[i] - ref[i]) <= 1e-5 * mag[i];
      if (!ok || std::isnan(ref[i]) != nan_row(n)) ++bad;
    }
  if (bad) ++failures;
  std::printf("%s %s (%d wrong of %lld)\n", bad ? "FAIL" : "ok", name.c_str(), bad,
              static_cast<long long>(M * N));
}

// MX linear with the special scale bytes: 0 (2^-127, no exponent field of its own) and 0xFF (NaN:
// the row is NaN), amid ordinary ones. x is scaled 2^20 over block 5, whose scale is 0 in the even
// rows, and 2^-100 elsewhere, so that those blocks weigh in the sums (read as 0, a row fails). (Not x
// near 2^120 instead: the kernels scale a block's sum after summing its unscaled codes times x,
// which would overflow there; see kernels/dot.h.)
void check_special_scales(cpu::ThreadPool& pool, Rng& rng) {
  const Format formats[] = {Format::MXFP4, Format::MXINT4, Format::MXFP8_E4M3, Format::MXINT8};
  const int64_t N = 24, K = 256, M = 2, groups = K / 32;
  for (Format f : formats) {
    TensorPtr wf = dense({N, K}, DType::Float32, rng);
    QTensorPtr w = make_qtensor({N, K}, f, 32);
    cpu::quantize(pool, *wf, *w);
    uint8_t* scales = static_cast<uint8_t*>(w->scales->data());
    for (int64_t r = 0; r < N; r += 2) scales[r * groups + 5] = 0x00;  // even rows: block 5
    scales[11 * groups + 0] = 0xFF;
    TensorPtr x = dense({M, K}, DType::Float32, rng);
    float* xv = x->data<float>();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t k = 0; k < K; ++k) xv[m * K + k] *= k / 32 == 5 ? 0x1p20f : 0x1p-100f;
    check_nan_rows(pool, "linear " + std::string(format_info(f).name) + " with scale bytes 0 and 0xFF",
                   *x, *w, [](int64_t n) { return n == 11; });
  }
}

// Linear with dense float32 / float16 / bfloat16 weights: few rows of x (the fused dot kernels)
// and more (gemm), K a whole number of 16-weight steps or not.
void check_linear_dense(cpu::ThreadPool& pool, Rng& rng) {
  const DType types[] = {DType::Float32, DType::Float16, DType::BFloat16};
  const int64_t shapes[][3] = {{1, 37, 70}, {3, 20, 256}, {8, 41, 131}, {9, 13, 48}};
  for (DType dt : types) {
    for (const auto& sh : shapes) {
      const int64_t M = sh[0], N = sh[1], K = sh[2];
      TensorPtr w = dense({N, K}, dt, rng), x = dense({M, K}, DType::Float32, rng);
      const std::vector<double> ref = product_reference(as_double(*x), as_double(*w), M, N, K, true);
      const std::vector<float> y = run_linear(pool, {x.get(), nullptr}, {w.get(), nullptr});
      report("linear dense " + std::string(dtype_name(dt)) + " M=" + std::to_string(M) + " N=" +
                 std::to_string(N) + " K=" + std::to_string(K),
             y.data(), ref, 2e-5);
    }
  }
}

// An FP8 E4M3 NaN code (0x7F / 0xFF, whatever the scale) makes its row of y NaN, wherever it sits
// in its block: one NaN code per row at positions that cover each group of 8 and 16 codes the
// vector decoders handle at once, in blocks of every position of a 4-block (128-code) step.
void check_fp8_nan_codes(cpu::ThreadPool& pool, Rng& rng) {
  const int64_t N = 40, K = 160;
  TensorPtr wf = dense({N, K}, DType::Float32, rng);
  QTensorPtr w = make_qtensor({N, K}, Format::MXFP8_E4M3, 32);
  cpu::quantize(pool, *wf, *w);
  uint8_t* codes = static_cast<uint8_t*>(w->codes->data());
  for (int64_t r = 0; r < N; r += 2) {
    const int64_t k = (r / 2 * 37 + 5) % K;  // every block, every offset mod 8 and mod 16 over the rows
    codes[r * K + k] = r % 4 ? 0xFF : 0x7F;
  }
  w->fp8_nan_codes = true;  // codes written here, as fromQuantized's scan would find them
  // 3 rows: the fused kernels; 20: gemm, its weight panels decoded by dequantize_span.
  for (int64_t M : {3, 20}) {
    TensorPtr x = dense({M, K}, DType::Float32, rng);
    check_nan_rows(pool, "linear " + std::to_string(M) + " rows, mxfp8 NaN codes at every offset of a block",
                   *x, *w, [](int64_t n) { return n % 2 == 0; });
  }
}

void check_matmul(cpu::ThreadPool& pool, Rng& rng) {
  const DType types[] = {DType::Float32, DType::Float16, DType::BFloat16};
  const int64_t shapes[][3] = {{1, 19, 40}, {9, 33, 17}, {67, 45, 130}, {130, 97, 257}};
  for (DType dt : types) {
    for (const auto& s : shapes) {
      const int64_t M = s[0], N = s[1], K = s[2];
      TensorPtr a = dense({M, K}, dt, rng), b = dense({K, N}, dt, rng);
      const std::vector<double> ref = product_reference(as_double(*a), as_double(*b), M, N, K, false);
      const MatmulParams p = check_matmul(*a, *b);
      std::vector<float> c(size_t(M * N));
      cpu::matmul(pool, *a, *b, p, c.data());
      report("matmul " + std::string(dtype_name(dt)) + " " + std::to_string(M) + "x" +
                 std::to_string(N) + "x" + std::to_string(K),
             c.data(), ref, 2e-5);
    }
  }
}

void check_attention(cpu::ThreadPool& pool, Rng& rng) {
  struct Case { int64_t Hq, Hkv, Lq, Lk, D; bool causal; };
  // Decode (Lq 1) with 1, 2, 3 and 4 query heads per kv head: every way the score sums of a
  // block of keys are reduced (attention_tile.h), key counts with and without a tail.
  const Case cases[] = {{4, 4, 1, 300, 64, false}, {8, 2, 1, 33, 128, false},
                        {3, 3, 1, 61, 32, false},  {4, 2, 1, 67, 64, false},
                        {6, 2, 1, 50, 48, false},
                        {4, 1, 7, 129, 80, true},  {4, 2, 33, 7, 96, true},
                        {2, 2, 40, 300, 128, true}, {8, 1, 129, 129, 64, false}};
  for (const Case& c : cases) {
    TensorPtr q = dense({1, c.Hq, c.Lq, c.D}, DType::Float32, rng);
    TensorPtr k = dense({1, c.Hkv, c.Lk, c.D}, DType::Float32, rng);
    TensorPtr v = dense({1, c.Hkv, c.Lk, c.D}, DType::Float32, rng);
    const Operand qo{q.get(), nullptr}, ko{k.get(), nullptr}, vo{v.get(), nullptr};
    const AttentionParams p = check_attention(qo, ko, vo, std::nullopt, c.causal, nullptr);
    const std::vector<double> qd = as_double(*q), kd = as_double(*k), vd = as_double(*v);
    std::vector<double> ref(size_t(c.Hq * c.Lq * c.D), 0.0), s(size_t(c.Lk));
    for (int64_t h = 0; h < c.Hq; ++h) {
      const int64_t hk = h / (c.Hq / c.Hkv);
      for (int64_t i = 0; i < c.Lq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < c.Lk; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += qd[size_t((h * c.Lq + i) * c.D + d)] * kd[size_t((hk * c.Lk + j) * c.D + d)];
          const bool seen = !c.causal || j <= i + (c.Lk - c.Lq);
          s[size_t(j)] = seen ? dot * p.scale : -INFINITY;
          mx = std::max(mx, s[size_t(j)]);
        }
        if (mx == -INFINITY) continue;  // a fully masked row is zeros
        double sum = 0;
        for (auto& e : s) { e = std::exp(e - mx); sum += e; }
        for (int64_t j = 0; j < c.Lk; ++j)
          for (int64_t d = 0; d < c.D; ++d)
            ref[size_t((h * c.Lq + i) * c.D + d)] +=
                s[size_t(j)] / sum * vd[size_t((hk * c.Lk + j) * c.D + d)];
      }
    }
    std::vector<float> o(ref.size());
    cpu::attention(pool, qo, ko, vo, p, o.data());
    char name[128];
    std::snprintf(name, sizeof name, "attention Hq=%lld Hkv=%lld Lq=%lld Lk=%lld D=%lld%s",
                  (long long)c.Hq, (long long)c.Hkv, (long long)c.Lq, (long long)c.Lk,
                  (long long)c.D, c.causal ? " causal" : "");
    report(name, o.data(), ref, 2e-5);
  }
}

// Inputs that reach every branch of the encoders: random values over many binades, exact ties,
// signed zeros, subnormals, values past every element's max, infinities and NaN.
std::vector<float> quantize_inputs(int64_t n, Rng& rng) {
  std::vector<float> v(static_cast<size_t>(n));
  const float specials[] = {0.f, -0.f, 1e-45f, -1e-40f, 0.25f, 0.75f, 1.25f, 6.f, 448.f,
                            57344.f, 1e30f, -1e30f, INFINITY, -INFINITY, NAN, 3.0e-3f};
  for (int64_t i = 0; i < n; ++i) {
    const float r = rng.next();
    v[size_t(i)] = i % 7 == 3 ? specials[(i / 7) % 16] : std::ldexp(r, int(i % 41) - 20);
  }
  return v;
}

int dump(const char* path) {
  FILE* out = std::fopen(path, "wb");
  if (!out) { std::perror(path); return 2; }
  auto put = [&](const void* p, size_t n) { std::fwrite(p, 1, n, out); };
  cpu::ThreadPool pool(2);
  Rng rng(7);
  const int64_t rows = 37, cols = 256;
  const std::vector<float> x = quantize_inputs(rows * cols, rng);
  for (int f = 0; f <= int(Format::AFFINE8); ++f) {
    const Format fmt = Format(f);
    for (int block : {32, 64, 128}) {
      if (!is_valid_block(fmt, block)) continue;
      auto t = std::make_shared<Tensor>();
      t->shape = {rows, cols};
      t->buffer = make_buffer(t->bytes());
      std::vector<float> xf = x;
      // Affine groups need finite inputs (docs/design/API.md); MX takes everything.
      if (format_info(fmt).affine)
        for (auto& e : xf) if (!std::isfinite(e) || std::fabs(e) > 1e4f) e = 1.f;
      std::memcpy(t->buffer->data(), xf.data(), t->bytes());
      QTensorPtr q = make_qtensor(t->shape, fmt, block);
      cpu::quantize(pool, *t, *q);
      put(q->codes->data(), q->codes->bytes());
      put(q->scales->data(), q->scales->bytes());
      if (q->biases) put(q->biases->data(), q->biases->bytes());
      std::vector<float> back(size_t(rows * cols));
      cpu::dequantize(pool, *q, back.data());
      put(back.data(), back.size() * 4);
    }
  }
  // Random codes (every bit pattern: NaN and infinite codes included) under scale bytes from 0 to
  // 0xFF (NaN), and affine groups under random finite float16 scales and biases: the vector
  // decoders (dequantize_span, the prefill and attention path) against the other machines'.
  Rng bits(11);
  auto byte = [&] {
    bits.next();
    return uint8_t(bits.s >> 40);
  };
  for (int f = 0; f <= int(Format::AFFINE8); ++f) {
    const Format fmt = Format(f);
    const bool affine = format_info(fmt).affine;
    const int block = 32;
    QTensorPtr q = make_qtensor({5, 384}, fmt, block);
    auto* codes = static_cast<uint8_t*>(q->codes->data());
    for (size_t i = 0; i < q->codes->bytes(); ++i) codes[i] = byte();
    auto* scales = static_cast<uint8_t*>(q->scales->data());
    const uint8_t special[] = {0, 1, 127, 200, 254, 255};
    for (size_t i = 0; i < q->scales->bytes(); ++i)
      scales[i] = affine || i % 3 ? byte() : special[i / 3 % 6];
    if (affine) {  // finite float16 scales and biases (an infinite one makes platform-defined NaNs)
      auto finite = [](uint8_t* p, size_t n) {
        for (size_t i = 1; i < n; i += 2)
          if ((p[i] & 0x7C) == 0x7C) p[i] ^= 0x04;
      };
      finite(scales, q->scales->bytes());
      auto* biases = static_cast<uint8_t*>(q->biases->data());
      for (size_t i = 0; i < q->biases->bytes(); ++i) biases[i] = byte();
      finite(biases, q->biases->bytes());
    }
    std::vector<float> back(size_t(q->rows() * q->cols()));
    cpu::dequantize(pool, *q, back.data());
    put(back.data(), back.size() * 4);
  }
  // Every float16 and bfloat16 bit pattern to float32, and the inputs back to both.
  std::vector<uint16_t> all(65536);
  for (size_t i = 0; i < all.size(); ++i) all[i] = uint16_t(i);
  std::vector<float> widened(all.size());
  half_to_float_n(all.data(), widened.data(), all.size());
  put(widened.data(), widened.size() * 4);
  bf16_to_float_n(all.data(), widened.data(), all.size());
  put(widened.data(), widened.size() * 4);
  std::vector<uint16_t> narrowed(x.size());
  float_to_half_n(x.data(), narrowed.data(), x.size());
  put(narrowed.data(), narrowed.size() * 2);
  float_to_bf16_n(x.data(), narrowed.data(), x.size());
  put(narrowed.data(), narrowed.size() * 2);
  return std::fclose(out) == 0 ? 0 : 2;
}

// Our CPUID/XGETBV detection (core/cpu_features.h) against the compiler runtime's
// __builtin_cpu_supports (libgcc / compiler-rt), where that exists to ask.
void check_cpu_features() {
  const X86Level ours = x86_detected_level();
  const bool vnni = x86_has_avx512_vnni();
  std::printf("cpu: detected=%s vnni=%d\n", x86_level_name(ours), vnni ? 1 : 0);
#if MTO_X86_KERNELS && defined(__GNUC__)
  __builtin_cpu_init();
  X86Level ref = X86Level::Baseline;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    ref = X86Level::Avx2;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl"))
      ref = __builtin_cpu_supports("avx512vbmi") ? X86Level::Avx512Vbmi : X86Level::Avx512;
  }
  const bool vnni_ref = ref >= X86Level::Avx512 && __builtin_cpu_supports("avx512vnni");
  const bool same = ours == ref && vnni == vnni_ref;
  if (!same) ++failures;
  std::printf("%s cpu features: CPUID/XGETBV says %s vnni=%d, __builtin_cpu_supports says %s vnni=%d\n",
              same ? "ok" : "FAIL", x86_level_name(ours), vnni ? 1 : 0, x86_level_name(ref), vnni_ref ? 1 : 0);
#endif
}

}  // namespace

int main(int argc, char** argv) {
  const std::string cmd = argc > 1 ? argv[1] : "";
  try {
    if (cmd == "dump" && argc == 3) return dump(argv[2]);
    if (cmd != "check") {
      std::fprintf(stderr, "usage: %s check | dump FILE\n", argv[0]);
      return 2;
    }
    const kernels::DotKernels* dot = kernels::dot_kernels();
    std::printf("isa: core=%s gemm=%s dot=%s\n", kernels::core_kernels().name,
                cpu::gemm_isa_name(cpu::gemm_isa()), dot ? dot->name : "none");
    check_cpu_features();
    cpu::ThreadPool pool(2);
    Rng rng(1);
    check_linear(pool, rng);
    check_fp8_nan_codes(pool, rng);
    check_special_scales(pool, rng);
    check_linear_dense(pool, rng);
    check_linear_int8(pool, rng);
    check_matmul(pool, rng);
    check_attention(pool, rng);
    failures += check_thread_pool();
    std::printf("%d failed\n", failures);
    return failures ? 1 : 0;
  } catch (const Error& e) {
    std::fprintf(stderr, "error %s: %s\n", e.code(), e.what());
    return 2;
  }
}
