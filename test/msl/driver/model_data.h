// Shared pieces of the model-op suites (elementwise_cases.cc, norm_cases.cc, rope_cases.cc,
// softmax_cases.cc, layout_cases.cc): host tensors for the cpu backend's kernels, data with the
// values at the edges of float32, exact comparisons, and plan-rule checks.
#pragma once
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "cases.h"
#include "core/tensor.h"

namespace mtoh_driver::model {

// A dense host tensor holding `v` rounded to `t` (int32: toward zero).
mto::Tensor tensor_of(const std::vector<float>& v, mto::Shape shape, mto::DType t);
// A dense host tensor of `t` with unspecified contents (a cpu kernel's output).
mto::Tensor empty_tensor(mto::Shape shape, mto::DType t);
Bytes bytes_of(const mto::Tensor& t);
std::vector<float> floats_of(const mto::Tensor& t);
const char* tag(mto::DType t);  // "f32", "f16", "bf16", "i32", "bool"

// n values from N(0, 1) * scale with, where `extremes` is set, every kind of edge value at
// seeded places: 0, -0, +-1e30, +-inf and NaN (about one element in 12).
std::vector<float> data_with_extremes(int64_t n, uint64_t seed, float scale, bool extremes);

// Bit-for-bit equality of two outputs of `dtype`, except that any NaN matches any NaN for the
// float dtypes (add and mul round once in float32 on both sides; NaN payloads are not specified).
Comparison compare_exact(const Bytes& got, const Bytes& want, mto::DType dtype, int64_t row_width, const char* what);

// A plan/... case: each check is (what, "" when the rule held or what happened instead).
CaseResult rule_checks(const std::vector<std::pair<std::string, std::string>>& checks);
// "" when `make` throws mto::Error with `code`, else what happened instead.
std::string expect_error(const char* code, const std::function<void()>& make);

}  // namespace mtoh_driver::model
