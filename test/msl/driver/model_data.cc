// Shared pieces of the model-op suites (model_data.h).
#include "model_data.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>

#include "core/dtype.h"
#include "core/error.h"
#include "data.h"

namespace mtoh_driver::model {

using mto::DType;

mto::Tensor empty_tensor(mto::Shape shape, DType t) {
  mto::Tensor x;
  x.shape = std::move(shape);
  x.dtype = t;
  x.buffer = mto::make_buffer(size_t(mto::shape_numel(x.shape)) * mto::dtype_size(t));
  return x;
}

mto::Tensor tensor_of(const std::vector<float>& v, mto::Shape shape, DType t) {
  mto::Tensor x = empty_tensor(std::move(shape), t);
  mto::from_float32(t, v.data(), x.buffer->data(), v.size());
  return x;
}

Bytes bytes_of(const mto::Tensor& t) {
  const auto* p = static_cast<const unsigned char*>(t.buffer->data());
  return Bytes(p, p + t.bytes());
}

std::vector<float> floats_of(const mto::Tensor& t) {
  std::vector<float> out(size_t(t.numel()));
  mto::to_float32(t.dtype, t.buffer->data(), out.data(), out.size());
  return out;
}

const char* tag(DType t) {
  switch (t) {
    case DType::Float32: return "f32";
    case DType::Float16: return "f16";
    case DType::BFloat16: return "bf16";
    case DType::Int32: return "i32";
    case DType::Bool: return "bool";
  }
  return "?";
}

std::vector<float> data_with_extremes(int64_t n, uint64_t seed, float scale, bool extremes) {
  std::vector<float> v = normal_data(n, seed, scale);
  if (!extremes) return v;
  const float inf = std::numeric_limits<float>::infinity();
  const float edge[] = {0.0f, -0.0f, 1e30f, -1e30f, inf, -inf, std::numeric_limits<float>::quiet_NaN()};
  Rng rng(seed ^ 0x5bd1e995u);
  for (int64_t i = 0; i < n; ++i) {
    if (rng.range(0, 11) == 0) v[size_t(i)] = edge[rng.range(0, 6)];
  }
  return v;
}

Comparison compare_exact(const Bytes& got, const Bytes& want, DType dtype, int64_t row_width, const char* what) {
  Comparison c;
  const size_t es = mto::dtype_size(dtype);
  if (got.size() != want.size()) {
    c.ok = false;
    c.mismatches = 1;
    c.first_mismatch = std::string(what) + ": " + std::to_string(got.size()) + " bytes, expected " +
                       std::to_string(want.size());
    return c;
  }
  const size_t n = got.size() / es;
  std::vector<float> g(mto::is_float(dtype) ? n : 0), w(g.size());
  if (mto::is_float(dtype)) {
    mto::to_float32(dtype, got.data(), g.data(), n);
    mto::to_float32(dtype, want.data(), w.data(), n);
  }
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&got[i * es], &want[i * es], es) == 0) continue;
    if (mto::is_float(dtype) && std::isnan(g[i]) && std::isnan(w[i])) continue;
    if (c.mismatches++ == 0) {
      char buf[200];
      unsigned gv = 0, wv = 0;
      std::memcpy(&gv, &got[i * es], es);
      std::memcpy(&wv, &want[i * es], es);
      std::snprintf(buf, sizeof buf, "%s[%lld, %lld]: kernel bits 0x%x (%.9g), cpu 0x%x (%.9g)", what,
                    (long long)(int64_t(i) / row_width), (long long)(int64_t(i) % row_width), gv,
                    g.empty() ? 0.0 : double(g[i]), wv, w.empty() ? 0.0 : double(w[i]));
      c.first_mismatch = buf;
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

std::string expect_error(const char* code, const std::function<void()>& make) {
  try {
    make();
  } catch (const mto::Error& e) {
    return std::string(e.code()) == code ? "" : std::string("threw ") + e.code() + ": " + e.what();
  }
  return std::string("did not throw ") + code;
}

CaseResult rule_checks(const std::vector<std::pair<std::string, std::string>>& checks) {
  CaseResult r;
  r.op = "plan";
  for (const auto& ch : checks) {
    if (ch.second.empty()) continue;
    r.error_kind = "mismatch";
    r.message = ch.first + ": " + ch.second;
    return r;
  }
  r.ok = true;
  return r;
}

}  // namespace mtoh_driver::model
