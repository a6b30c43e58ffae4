// MX quantization on the GPU (shaders/quantize.metal) against the cpu quantizer: codes and E8M0
// scales must be bit-identical, for every MX format and input dtype, on shapes whose last
// threadgroup is partial, and blocks whose largest magnitude is 2^-126, just below or just above.
#include <cmath>
#include <cstdio>
#include <limits>
#include <cstring>
#include <algorithm>

#include "../../../shaders/mx_dequant.h"
#include "../../../shaders/mx_stage.h"
#include "cases.h"
#include "core/dtype.h"
#include "core/error.h"
#include "core/formats.h"
#include "data.h"

namespace mtoh_driver {
namespace {

using mto::plan::Arg;

struct Shape2 {
  int64_t rows, cols;
};

// x converted to `dtype` (raw bytes for the kernel) and back to float32 (for the cpu quantizer,
// which converts non-float32 inputs the same way: cpu::quantize).
void convert(const std::vector<float>& x, mto::DType dtype, Bytes* raw, std::vector<float>* as_f32) {
  raw->resize(x.size() * mto::dtype_size(dtype));
  mto::from_float32(dtype, x.data(), raw->data(), x.size());
  as_f32->resize(x.size());
  mto::to_float32(dtype, raw->data(), as_f32->data(), x.size());
}

Comparison exact(const char* what, const Bytes& got, const Bytes& want, int64_t bytes_per_row) {
  Comparison c;
  for (size_t i = 0; i < want.size(); ++i) {
    if (got[i] == want[i]) continue;
    if (c.mismatches++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s byte %zu (row %lld): kernel 0x%02x, cpu 0x%02x", what, i,
                    (long long)(int64_t(i) / bytes_per_row), got[i], want[i]);
      c.first_mismatch = buf;
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

// Blocks at the bottom of float32's normal range (the scale exponent's edge, mx_encode.h
// mto_mx_scale_exponent): block 0's largest magnitude is exactly 2^-126 (the smallest normal), block
// 1's the largest subnormal, block 2's 2^-125; the other elements smaller, of both signs.
std::vector<float> tiny_block_data(int64_t rows, int64_t cols, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> x(size_t(rows * cols));
  const float amax[] = {std::numeric_limits<float>::min(),
                        std::nextafter(std::numeric_limits<float>::min(), 0.0f),
                        2 * std::numeric_limits<float>::min()};
  for (int64_t b = 0; b < rows * cols / 32; ++b) {
    float* v = x.data() + b * 32;
    const float top = amax[b % 3];
    for (int i = 0; i < 32; ++i) v[i] = top * float(rng.range(-1000, 1000)) / 1000.0f;
    v[(b * 5) % 32] = (b & 1) ? -top : top;
  }
  return x;
}

CaseResult run_case(mto::Format f, mto::DType dtype, Shape2 s, const std::string& name,
                    const std::string& variant, bool tiny = false) {
  Bytes raw;
  std::vector<float> as_f32;
  convert(tiny ? tiny_block_data(s.rows, s.cols, seed_of(name)) : mx_block_data(s.rows, s.cols, seed_of(name)), dtype,
          &raw, &as_f32);
  const int64_t code_row = int64_t(mto::row_code_bytes(f, s.cols));
  Bytes codes(size_t(s.rows * code_row)), scales(size_t(s.rows * s.cols / 32));
  mto::mx_quantize_rows(f, as_f32.data(), s.rows, s.cols, codes.data(), scales.data());

  const mto::plan::Dispatch plan = mto::plan::plan_quantize(f, dtype, s.rows, s.cols);
  return run_plan_case("quantize", plan, variant, {{Arg::X, raw}},
                       {{Arg::Codes, codes.size()}, {Arg::Scales, scales.size()}},
                       [&](const std::map<Arg, Bytes>& out) {
                         Comparison c = exact("scales", out.at(Arg::Scales), scales, s.cols / 32);
                         if (!c.ok) return c;
                         return exact("codes", out.at(Arg::Codes), codes, code_row);
                       });
}

}  // namespace

std::vector<Case> quantize_cases() {
  const mto::Format formats[] = {mto::Format::MXFP8_E4M3, mto::Format::MXFP8_E5M2, mto::Format::MXFP6_E3M2,
                                 mto::Format::MXFP6_E2M3, mto::Format::MXFP4,      mto::Format::MXINT8,
                                 mto::Format::MXINT4,     mto::Format::MXINT2};
  const mto::DType dtypes[] = {mto::DType::Float32, mto::DType::Float16, mto::DType::BFloat16};
  // 1 block; 9 blocks (one threadgroup of 8 SIMD-groups plus one); 34 blocks in rows of 2.
  const Shape2 shapes[] = {{1, 32}, {3, 96}, {17, 64}};
  std::vector<Case> cases;
  for (mto::Format f : formats)
    for (mto::DType t : dtypes)
      for (Shape2 s : shapes) {
        const std::string name = std::string("quantize/") + mto::format_info(f).name + "/" +
                                 mto::dtype_name(t) + "/" + std::to_string(s.rows) + "x" + std::to_string(s.cols);
        cases.push_back({name, [=](const std::string& variant) { return run_case(f, t, s, name, variant); }});
      }
  // The smallest normal as a block's largest magnitude (float32 and bfloat16 hold it).
  for (mto::Format f : formats)
    for (mto::DType t : {mto::DType::Float32, mto::DType::BFloat16}) {
      const std::string name = std::string("quantize/") + mto::format_info(f).name + "/" + mto::dtype_name(t) + "/3x32/tiny";
      cases.push_back({name, [=](const std::string& variant) { return run_case(f, t, {3, 32}, name, variant, true); }});
    }
  return cases;
}

// The shader-side format table (mx_formats.h) must match the one the cpu uses, every field of every format.
std::vector<Case> table_cases() {
  Case c;
  c.name = "table/format_traits";
  c.run = [](const std::string&) {
    CaseResult r;
    r.op = "table";
    r.ok = true;
    for (int i = 0; i <= int(mto::Format::AFFINE8); ++i) {
      const mto::FormatInfo& info = mto::format_info(mto::Format(i));
      const bool same = mto_format_bits(i) == info.bits && mto_format_is_affine(i) == info.affine &&
                        mto_format_emax(i) == info.emax && mto_format_element(i) == int(info.element);
      if (!same) {
        r.ok = false;
        r.error_kind = "mismatch";
        r.message = std::string("shaders/mx_formats.h's format table disagrees with formats.cc for ") + info.name;
        break;
      }
    }
    return r;
  };
  // mx_stage.h's element ranges, from every code of each MX element: the smallest nonzero magnitude
  // is 2^lsb and every value a multiple of it, every finite magnitude is below 2^top and the largest
  // reaches 2^(top-1), and no value has more than 8 significant bits (what a 16-bit staging keeps).
  Case range;
  range.name = "table/element_range";
  range.run = [](const std::string&) {
    CaseResult r;
    r.op = "table";
    r.ok = true;
    for (int i = 0; i <= int(mto::Format::MXINT2); ++i) {
      const int lsb = mto_element_lsb_exp(i), top = mto_element_top_exp(i);
      double smallest = INFINITY, largest = 0;
      bool ok = true;
      for (uint32_t code = 0; code < (1u << mto_format_bits(i)); ++code) {
        const double v = std::fabs(double(mto_decode_element(mto_format_element(i), code)));
        if (!std::isfinite(v) || v == 0) continue;
        smallest = std::min(smallest, v);
        largest = std::max(largest, v);
        double odd = std::ldexp(v, -lsb);  // v in steps of 2^lsb: an integer
        const bool whole = odd == std::floor(odd);
        while (whole && std::fmod(odd, 2) == 0) odd /= 2;
        ok = ok && whole && v < std::ldexp(1.0, top) && odd < 256;  // odd < 2^8: 8 significant bits
      }
      ok = ok && smallest == std::ldexp(1.0, lsb) && largest >= std::ldexp(1.0, top - 1);
      if (!ok) {
        r.ok = false;
        r.error_kind = "mismatch";
        r.message = std::string("shaders/mx_stage.h's range disagrees with the decoded elements of ") +
                    mto::format_info(mto::Format(i)).name;
        break;
      }
    }
    return r;
  };
  return {c, range};
}

}  // namespace mtoh_driver
