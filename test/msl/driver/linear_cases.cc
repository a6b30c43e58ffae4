// Quantized linear on the GPU (shaders/qlinear.metal) against the cpu backend's linear:
// max |y - ref| <= 1e-4 * (1 + |ref|), for every format (affine with each group size), M on both
// sides of the decode/tiled switch and at tile edges, N and K not multiples of the tiles,
// float32, float16 and bfloat16 activations, and y in each of those dtypes (the kernels round once
// as they store y, as the cpu backend does: one unit in the last place more for float16/bfloat16).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "cases.h"
#include "core/formats.h"
#include "core/ops.h"
#include "core/tensor.h"
#include "cpu/ops.h"
#include "data.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

// float32 accumulation. Also for float16/bfloat16 x (stricter than the 1e-3 the issue allows
// there): the kernels and the cpu backend both widen x to float32 exactly before multiplying.
constexpr double kTolerance = 1e-4;
// Plus, per output, kSumUnits float32 rounding units (2^-24) of sum_k |x w| + |bias|: the weight
// blocks are scaled 2^-4 .. 2^4, so a sum's terms can be thousands of times the result, and two
// float32 sums of them in different orders (the kernel's, the cpu backend's: AVX2, AVX-512 and NEON
// each sum in their own order) differ by a few units of that, whatever the result.
constexpr double kSumUnits = 4;

// kSumUnits * 2^-24 * (sum_k |x[m,k] w[n,k]| + |bias[n]|) for each output, from the values the kernel reads.
std::vector<double> sum_slack(const mto::Tensor& x, const mto::QTensor& w, const mto::Tensor* bias, int64_t M,
                              int64_t N, int64_t K, double units = kSumUnits) {
  mto::cpu::ThreadPool pool(1);
  std::vector<float> wd(size_t(N * K)), xd(size_t(M * K));
  mto::cpu::dequantize(pool, w, wd.data());
  mto::to_float32(x.dtype, x.buffer->data(), xd.data(), xd.size());
  std::vector<double> slack(size_t(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double mag = bias ? std::fabs(double(bias->data<float>()[n])) : 0.0;
      for (int64_t k = 0; k < K; ++k) mag += std::fabs(double(xd[size_t(m * K + k)]) * wd[size_t(n * K + k)]);
      slack[size_t(m * N + n)] = units * std::ldexp(mag, -24);
    }
  return slack;
}

struct LinearShape {
  int64_t M, N, K;
  int block;
  bool bias;
  // Weight row 5 (in the first N tile only) times 2^w_shift and x times 2^x_shift: block scales
  // outside what a 16-bit staging keeps exact (shaders/mx_stage.h) in one threadgroup of several.
  int w_shift = 0, x_shift = 0;
  // The 16-bit staging rule at its edges (shaders/mx_stage.h): every weight row made of the
  // format's own values at a block scale 2^mid that keeps them exact in 16 bits, but row lo_row at
  // 2^lo, where its small values fall below the 16-bit type's subnormals, and row hi_row at 2^hi,
  // where its largest overflow float16 (-1: no such row). x is zero at the first column of each
  // block, which holds a row's largest value (the block's scale): so the lo row's output is made
  // of its small values alone.
  struct Edges {
    int mid, lo, hi;
    int64_t lo_row, hi_row;
    bool every_row_lo = false;  // every row made as lo_row is
  };
  std::optional<Edges> edges = std::nullopt;
};

// The finite values of an element encoding (the cpu backend's codec) no larger in magnitude than
// its largest positive one: the integer encodings' most negative code (-2 for int8) would raise
// the block's scale by one.
std::vector<float> element_values(const mto::FormatInfo& info) {
  std::vector<float> all;
  float top = 0;
  for (int c = 0; c < (1 << info.bits); ++c) {
    const float x = mto::decode_element(info.element, uint8_t(c));
    if (!std::isfinite(x)) continue;
    all.push_back(x);
    top = std::max(top, x);
  }
  std::vector<float> v;
  for (float x : all)
    if (std::fabs(x) <= top) v.push_back(x);
  return v;
}

// The largest and the smallest nonzero magnitude of element_values.
std::pair<float, float> element_range(const mto::FormatInfo& info) {
  float top = 0, lsb = INFINITY;
  for (float x : element_values(info)) {
    top = std::max(top, std::fabs(x));
    if (x != 0) lsb = std::min(lsb, std::fabs(x));
  }
  return {top, lsb};
}

// The weights of an edge case ([N, K]) and each row's scale exponent: every block opens with the
// format's largest magnitude (its scale is then 2^e exactly), then its smallest nonzero one; the
// rest is drawn from all of its values, or for the lo row from 1, 2, 3 times the smallest (the
// values a too-narrow staging loses); the hi row's second value is the largest again.
std::vector<int> edge_weights(const mto::FormatInfo& info, const LinearShape::Edges& g, int64_t N, int64_t K, Rng& rng,
                              std::vector<float>& w) {
  const std::vector<float> values = element_values(info);
  const auto [top, lsb] = element_range(info);
  const int most = top / lsb >= 3 ? 3 : int(top / lsb);  // multiples of lsb up to top (int2: lsb = top = 1)
  std::vector<int> exps(size_t(N), g.every_row_lo ? g.lo : g.mid);
  if (g.lo_row >= 0) exps[size_t(g.lo_row)] = g.lo;
  if (g.hi_row >= 0) exps[size_t(g.hi_row)] = g.hi;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k) {
      const bool lo_row = g.every_row_lo || n == g.lo_row;
      const int i = int(k % 32);
      const float sign = rng.range(0, 1) ? 1.0f : -1.0f;
      const float v = i == 0                                  ? -top
                      : i == 1 && n == g.hi_row               ? top
                      : i == 1                                ? lsb
                      : lo_row                                ? sign * lsb * float(rng.range(1, most))
                                                              : values[size_t(rng.range(0, int(values.size()) - 1))];
      w[size_t(n * K + k)] = std::ldexp(v, exps[size_t(n)]);
    }
  return exps;
}

Bytes bytes_of(const mto::Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return Bytes(p, p + b.bytes());
}

mto::Tensor dense(const std::vector<float>& v, mto::Shape shape, mto::DType dtype = mto::DType::Float32) {
  mto::Tensor t;
  t.shape = std::move(shape);
  t.dtype = dtype;
  t.buffer = mto::make_buffer(v.size() * mto::dtype_size(dtype));
  mto::from_float32(dtype, v.data(), t.buffer->data(), v.size());
  return t;
}

CaseResult run_case(mto::Format f, mto::DType xt, mto::DType yt, LinearShape s, const std::string& name,
                    const std::string& variant, mto::Tier tier, double tolerance = kTolerance) {
  const uint64_t seed = seed_of(name);
  std::vector<float> xv = normal_data(s.M * s.K, seed);
  for (float& v : xv) v = std::ldexp(v, s.x_shift);
  if (s.edges)
    for (int64_t i = 0; i < s.M * s.K; i += 32) xv[size_t(i)] = 0.0f;
  const mto::Tensor x = dense(xv, {s.M, s.K}, xt);
  // Weight rows at different magnitudes, so scales differ from row to row and block to block.
  std::vector<float> wv = normal_data(s.N * s.K, seed + 1);
  Rng rng(seed + 2);
  for (int64_t b = 0; b < s.N * s.K / 32; ++b) {
    const float scale = std::ldexp(1.0f, rng.range(-4, 4));
    for (int i = 0; i < 32; ++i) wv[size_t(b * 32 + i)] *= scale;
  }
  if (s.w_shift != 0)
    for (int64_t k = 0; k < s.K; ++k) wv[size_t(5 * s.K + k)] = std::ldexp(wv[size_t(5 * s.K + k)], s.w_shift);
  const std::vector<int> edge_exps = s.edges ? edge_weights(mto::format_info(f), *s.edges, s.N, s.K, rng, wv)
                                             : std::vector<int>();
  const mto::Tensor wd = dense(wv, {s.N, s.K});
  const mto::Tensor bias = dense(normal_data(s.N, seed + 3), {s.N});

  mto::cpu::ThreadPool pool(1);
  mto::QTensorPtr w = mto::make_qtensor({s.N, s.K}, f, s.block);
  mto::cpu::quantize(pool, wd, *w);
  for (size_t row = 0; row < edge_exps.size(); ++row)
    for (int64_t b = 0; b < s.K / 32; ++b) {
      const int byte = static_cast<const uint8_t*>(w->scales->data())[int64_t(row) * (s.K / 32) + b];
      if (byte != 127 + edge_exps[row]) {
        CaseResult r;
        r.name = name;
        r.error_kind = "setup";
        r.message = "edge row " + std::to_string(row) + " block " + std::to_string(b) + ": scale byte " +
                    std::to_string(byte) + ", meant " + std::to_string(127 + edge_exps[row]);
        return r;
      }
    }
  const mto::Operand xo{&x, nullptr}, wo{nullptr, w.get()};
  const mto::Tensor* bias_ptr = s.bias ? &bias : nullptr;
  const mto::LinearParams lp = mto::check_linear(xo, wo, bias_ptr, yt);
  std::vector<float> ref(size_t(s.M * s.N));  // float32; compare_outputs rounds it to y's dtype
  mto::cpu::linear(pool, xo, wo, bias_ptr, lp, ref.data());
  // An edge case's blocks span their format's whole range (2^32 for E5M2): more units of the sum.
  const std::vector<double> slack = sum_slack(x, *w, bias_ptr, s.M, s.N, s.K, s.edges ? 4 * kSumUnits : kSumUnits);

  std::map<Arg, Bytes> inputs = {{Arg::X, bytes_of(*x.buffer)},
                                 {Arg::WCodes, bytes_of(*w->codes)},
                                 {Arg::WScales, bytes_of(*w->scales)}};
  if (w->biases) inputs[Arg::WBiases] = bytes_of(*w->biases);
  if (s.bias) inputs[Arg::Bias] = bytes_of(*bias.buffer);

  const mto::plan::Dispatch plan =
      mto::plan::plan_linear(f, s.block, xt, lp.out_dtype, s.M, s.N, s.K, s.bias, tier);
  return run_plan_case("linear", plan, variant, inputs, {{Arg::Y, ref.size() * mto::dtype_size(lp.out_dtype)}},
                       [&](const std::map<Arg, Bytes>& out) {
                         return compare_outputs(out.at(Arg::Y), lp.out_dtype, ref, tolerance, s.N, "y", &slack);
                       });
}

}  // namespace

CaseResult run_linear_case(mto::Format f, int block, mto::DType x, mto::DType y, int64_t M, int64_t N, int64_t K,
                           bool bias, const std::string& name, const std::string& variant, mto::Tier tier,
                           double tolerance) {
  return run_case(f, x, y, {M, N, K, block, bias}, name, variant, tier, tolerance);
}

std::string linear_case_name(const std::string& prefix, mto::Format f, int block, mto::DType x, mto::DType y,
                             int64_t M, int64_t N, int64_t K, bool bias) {
  std::string name = prefix + mto::format_info(f).name;
  if (mto::format_info(f).affine) name += ".g" + std::to_string(block);
  if (x != mto::DType::Float32) name += x == mto::DType::Float16 ? "/f16" : "/bf16";
  if (y != mto::DType::Float32) name += y == mto::DType::Float16 ? "/of16" : "/obf16";
  return name + "/M" + std::to_string(M) + "/N" + std::to_string(N) + "/K" + std::to_string(K) + (bias ? "/bias" : "");
}

std::vector<Case> linear_cases() {
  struct Config {
    mto::Format format;
    int block;
    int64_t K;  // a multiple of the block; not of the 64-wide K tile where the block allows
  };
  const Config configs[] = {
      {mto::Format::MXFP8_E4M3, 32, 96}, {mto::Format::MXFP8_E5M2, 32, 96},
      {mto::Format::MXFP6_E3M2, 32, 96}, {mto::Format::MXFP6_E2M3, 32, 96},
      {mto::Format::MXFP4, 32, 96},      {mto::Format::MXINT8, 32, 96},
      {mto::Format::MXINT4, 32, 96},     {mto::Format::MXINT2, 32, 96},
      {mto::Format::AFFINE4, 32, 96},    {mto::Format::AFFINE4, 64, 192},
      {mto::Format::AFFINE4, 128, 384},  {mto::Format::AFFINE8, 32, 160},
      {mto::Format::AFFINE8, 64, 192},   {mto::Format::AFFINE8, 128, 384},
  };
  std::vector<Case> cases;
  // prefix "linear/": the simdgroup tier; "linear-tensorops/": the tensorops tier (matmul2d for
  // M > 8 with the cooperative-tensor layout scrambled by MTOH_COOP_SEED, decode below).
  using mto::DType;
  auto add_tier = [&](const Config& c, DType xt, DType yt, LinearShape s, const std::string& prefix, mto::Tier tier) {
    const std::string name = linear_case_name(prefix, c.format, c.block, xt, yt, s.M, s.N, s.K, s.bias);
    cases.push_back({name, [=](const std::string& variant) { return run_case(c.format, xt, yt, s, name, variant, tier); }});
  };
  auto add = [&](const Config& c, LinearShape s, DType xt = DType::Float32, DType yt = DType::Float32) {
    add_tier(c, xt, yt, s, "linear/", mto::Tier::Simdgroup);
    add_tier(c, xt, yt, s, "linear-tensorops/", mto::Tier::TensorOps);
  };
  for (const Config& c : configs) {
    // M = 1, 3, 8: the decode kernel; 9, 33: the tiled kernel with a partial last row tile.
    // N = 37: a partial last tile in both kernels (rows of 8 and 32).
    for (int64_t M : {1, 3, 8, 9, 33}) add(c, {M, 37, c.K, c.block, M == 3 || M == 33});
    // float16 / bfloat16 x through both kernels of each tier, edge tiles included.
    for (int64_t M : {1, 3, 8, 9, 33}) {
      add(c, {M, 37, c.K, c.block, M == 3}, DType::Float16);
      add(c, {M, 37, c.K, c.block, M == 33}, DType::BFloat16);
    }
    // y of x's dtype (linear's default outDtype) for float16 and bfloat16: the instances that
    // round y as they store it, through both kernels of each tier.
    for (int64_t M : {3, 33}) add(c, {M, 37, c.K, c.block, M == 33}, DType::Float16, DType::Float16);
    for (int64_t M : {8, 9}) add(c, {M, 37, c.K, c.block, M == 8}, DType::BFloat16, DType::BFloat16);
  }
  // A 16-bit y of a dtype other than x's (an explicit outDtype; the float16/bfloat16 x cases above
  // have float32 y), in both kernels, for an FP, an INT and an affine format.
  const DType f32 = DType::Float32, f16 = DType::Float16, bf16 = DType::BFloat16;
  const std::pair<DType, DType> pairs[] = {{f32, f16}, {f32, bf16}, {f16, bf16}, {bf16, f16}};
  for (const Config& c : {configs[4], configs[5], configs[9]})  // mxfp4, mxint8, affine4.g64
    for (const auto& [xt, yt] : pairs)
      for (int64_t M : {1, 40}) add(c, {M, 37, c.K, c.block, M == 40}, xt, yt);
  // K long enough for several decode steps (a lane's second run starts at 512) and K tiles, whole
  // N tiles; the decode kernel with one row of x (its registers-only path) and with two.
  for (mto::Format f : {mto::Format::MXFP8_E4M3, mto::Format::MXFP6_E2M3, mto::Format::MXFP4,
                        mto::Format::MXINT2}) {
    add({f, 32, 544}, {1, 64, 544, 32, true});
    add({f, 32, 544}, {2, 64, 544, 32, false});
    add({f, 32, 544}, {40, 64, 544, 32, true});
  }
  // The tensorops tier stages float16/bfloat16 x and an MX weight as 16-bit values where every
  // block scale of a threadgroup's weight rows keeps them exact, else as float32. One weight row
  // with scales past float16's range (above, below), or below bfloat16's, sends its threadgroup to
  // float32 tiles while the other stays 16-bit; compared with the sum slack alone (no absolute
  // tolerance), which scales with the row, so a 16-bit tile that lost bits of a tiny row fails.
  for (mto::Format f : {mto::Format::MXFP8_E4M3, mto::Format::MXFP4, mto::Format::MXINT8}) {
    const Config c{f, 32, 96};
    for (int w_shift : {16, -20}) {
      const LinearShape s{40, 37, 96, 32, false, w_shift, 0};
      const std::string name = linear_case_name("linear-tensorops/", f, 32, DType::Float16, DType::Float32, s.M,
                                                s.N, s.K, false) + "/w" + std::to_string(w_shift);
      cases.push_back({name, [=](const std::string& v) {
                         return run_case(c.format, DType::Float16, DType::Float32, s, name, v, mto::Tier::TensorOps, 0);
                       }});
    }
    const LinearShape s{40, 37, 96, 32, false, -125, 20};
    const std::string name = linear_case_name("linear-tensorops/", f, 32, DType::BFloat16, DType::Float32, s.M, s.N,
                                              s.K, false) + "/w-125/x20";
    cases.push_back({name, [=](const std::string& v) {
                       return run_case(c.format, DType::BFloat16, DType::Float32, s, name, v, mto::Tier::TensorOps, 0);
                     }});
  }
  // The same rule at its edges for every MX format (LinearShape::Edges), from the codec's values
  // rather than mx_stage.h's table: the scale exponents just past float16's subnormals and range,
  // and bfloat16's subnormals where an E8M0 scale reaches them (x times 2^20 there, so that the
  // products stay float32 normals), each in an N tile of its own (32 rows) beside tiles that stay
  // 16-bit. A row staged in 16 bits where it should not be loses or overflows values.
  for (mto::Format f : {mto::Format::MXFP8_E4M3, mto::Format::MXFP8_E5M2, mto::Format::MXFP6_E3M2,
                        mto::Format::MXFP6_E2M3, mto::Format::MXFP4, mto::Format::MXINT8, mto::Format::MXINT4,
                        mto::Format::MXINT2}) {
    const auto [top, lsb] = element_range(mto::format_info(f));
    int hi = -127;  // the smallest scale exponent at which top overflows float16
    while (std::ldexp(top, hi) <= 65504.0f) ++hi;
    const int lo16 = -25 - std::ilogb(lsb), lo_bf16 = -134 - std::ilogb(lsb), mid = (lo16 + 1 + hi - 1) / 2;
    for (DType xt : {DType::Float16, DType::BFloat16}) {
      LinearShape s{40, 70, 96, 32, false};
      if (xt == DType::Float16) s.edges = LinearShape::Edges{mid, lo16, hi, 5, 45};
      else if (lo_bf16 >= -127) s.edges = LinearShape::Edges{mid, lo_bf16, 0, 5, -1}, s.x_shift = 20;
      else continue;  // no E8M0 scale reaches bfloat16's subnormals
      const std::string name = linear_case_name("linear-tensorops/", f, 32, xt, DType::Float32, s.M, s.N, s.K, false) +
                               "/edges";
      cases.push_back({name, [=](const std::string& v) {
                         return run_case(f, xt, DType::Float32, s, name, v, mto::Tier::TensorOps, 0);
                       }});
    }
    // 10 blocks a row (a threadgroup's scan of its rows' scales takes more than one pass of its
    // threads): one row past float16's range in the second N tile alone (scale index 130 of its
    // 320), and every row below float16's subnormals (every SIMD-group's share finds one).
    for (bool all_lo : {false, true}) {
      LinearShape s{40, 70, 320, 32, false};
      s.edges = all_lo ? LinearShape::Edges{mid, lo16, 0, -1, -1, true} : LinearShape::Edges{mid, 0, hi, -1, 45};
      const std::string name = linear_case_name("linear-tensorops/", f, 32, DType::Float16, DType::Float32, s.M,
                                                s.N, s.K, false) + (all_lo ? "/edges/all_lo" : "/edges/tile1");
      cases.push_back({name, [=](const std::string& v) {
                         return run_case(f, DType::Float16, DType::Float32, s, name, v, mto::Tier::TensorOps, 0);
                       }});
    }
  }
  // 64 x 64 tiles (16-bit x, enough tiles): 16-bit staging, float32 staging with its 32-column K
  // step (an affine weight; a row past float16's range in one threadgroup: overflow to inf, were it
  // staged as float16, which the relative tolerance sees), partial tiles, a K tail.
  const LinearShape big{650, 970, 96, 32, true};
  add_tier({mto::Format::MXFP4, 32, 96}, DType::Float16, DType::Float32, big, "linear-tensorops/", mto::Tier::TensorOps);
  add_tier({mto::Format::MXFP8_E4M3, 32, 96}, DType::BFloat16, DType::BFloat16, big, "linear-tensorops/",
           mto::Tier::TensorOps);
  add_tier({mto::Format::AFFINE4, 32, 96}, DType::Float16, DType::Float16, big, "linear-tensorops/",
           mto::Tier::TensorOps);
  {
    const LinearShape s{650, 970, 96, 32, false, 16, 0};
    const std::string name = linear_case_name("linear-tensorops/", mto::Format::MXFP8_E4M3, 32, DType::Float16,
                                              DType::Float32, s.M, s.N, s.K, false) + "/w16";
    cases.push_back({name, [=](const std::string& v) {
                       return run_case(mto::Format::MXFP8_E4M3, DType::Float16, DType::Float32, s, name, v,
                                       mto::Tier::TensorOps);
                     }});
  }
  // Affine groups over several decode steps: the group index of a lane's second run.
  add({mto::Format::AFFINE4, 64, 576}, {1, 64, 576, 64, false});
  add({mto::Format::AFFINE8, 128, 640}, {2, 64, 640, 128, true});
  return cases;
}

}  // namespace mtoh_driver
