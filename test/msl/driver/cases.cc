// run_plan_case and the JSON form of a result (cases.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cases.h"

namespace mtoh_driver {

const PlanPass kPlanPasses[2] = {
    {true, false, 0xFF, 0xFF, " (pass 1: regions end at their guard page)"},
    {false, true, 0x7B, 0x7F, " (pass 2: regions start at their guard page, threads in reverse)"}};

CaseResult run_plan_case(const std::string& op, const mto::plan::Dispatch& plan,
                         const std::string& variant, const std::map<mto::plan::Arg, Bytes>& inputs,
                         const std::map<mto::plan::Arg, size_t>& output_sizes, const Compare& compare) {
  CaseResult r;
  r.op = op;
  r.kernel = plan.kernel;
  r.grid = dims_json(plan.threadgroups);
  r.threads = dims_json(plan.threads_per_threadgroup);

  std::map<mto::plan::Arg, Bytes> first;
  for (int i = 0; i < 2; ++i) {
    const PlanPass& pass = kPlanPasses[i];
    mtoh::RunOptions opt;
    opt.align_end = pass.align_end;
    opt.reverse_order = pass.reverse;
    opt.threadgroup_poison = pass.threadgroup_poison;
    PlanRun run = execute_plan(plan, variant, inputs, output_sizes, opt, pass.output_poison);
    const std::string pass_name = pass.name;
    if (!run.result.ok) {
      r.error_kind = run.result.kind;
      r.message = run.result.message + pass_name;
      return r;
    }
    r.compare = compare(run.outputs);
    if (!r.compare.ok) {
      r.error_kind = "mismatch";
      r.message = r.compare.first_mismatch + pass_name;
      return r;
    }
    if (i == 0) {
      first = run.outputs;
    } else if (first != run.outputs) {
      r.error_kind = "nondeterministic";
      r.message = "the two passes produced different bits (a race, or a read of unwritten memory)";
      return r;
    }
  }
  r.ok = true;
  return r;
}

namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  if (std::strchr(buf, 'n') || std::strchr(buf, 'i')) return "null";  // nan, inf: not JSON
  return buf;
}

}  // namespace

std::string to_json(const CaseResult& r) {
  std::string j = "{\"name\": \"" + escape(r.name) + "\", \"op\": \"" + escape(r.op) + "\"";
  if (!r.kernel.empty()) j += ", \"kernel\": \"" + escape(r.kernel) + "\", \"grid\": " + r.grid + ", \"threads\": " + r.threads;
  j += std::string(", \"ok\": ") + (r.ok ? "true" : "false");
  if (!r.ok) j += ", \"error\": {\"kind\": \"" + escape(r.error_kind) + "\", \"message\": \"" + escape(r.message) + "\"}";
  else if (!r.message.empty()) j += ", \"detected\": \"" + escape(r.message) + "\"";  // misuse cases
  j += ", \"max_abs_err\": " + num(r.compare.max_abs_err) + ", \"worst_ratio\": " + num(r.compare.worst_ratio) +
       ", \"mismatches\": " + std::to_string(r.compare.mismatches) + ", \"ms\": " + num(r.ms);
  j += ", \"libraries\": [";
  for (size_t i = 0; i < r.libraries.size(); ++i) j += (i ? ", \"" : "\"") + escape(r.libraries[i]) + "\"";
  return j + "]}";
}

namespace {

// The spacing of float16 / bfloat16 values at magnitude |x| (subnormal spacing below the normal
// range and for non-finite x); 0 for float32, whose comparisons add none.
double ulp_at(mto::DType t, double x) {
  if (t != mto::DType::Float16 && t != mto::DType::BFloat16) return 0.0;
  const int mantissa_bits = t == mto::DType::Float16 ? 10 : 7;
  const int min_exponent = t == mto::DType::Float16 ? -14 : -126;
  int exponent = min_exponent;
  if (x != 0.0 && std::isfinite(x)) {
    std::frexp(std::fabs(x), &exponent);  // |x| = f * 2^exponent, f in [0.5, 1)
    exponent = std::max(exponent - 1, min_exponent);
  }
  return std::ldexp(1.0, exponent - mantissa_bits);
}

}  // namespace

Comparison compare_outputs(const Bytes& got_bytes, mto::DType dtype, const std::vector<float>& ref_f32,
                           double tolerance, int64_t row_width, const char* what,
                           const std::vector<double>* slack) {
  Comparison c;
  const size_t n = ref_f32.size();
  if (got_bytes.size() != n * mto::dtype_size(dtype)) {
    c.ok = false;
    c.mismatches = 1;
    c.first_mismatch = std::string(what) + ": " + std::to_string(got_bytes.size()) + " bytes for " +
                       std::to_string(n) + " elements of " + mto::dtype_name(dtype);
    return c;
  }
  std::vector<float> got(n), ref(n);
  mto::to_float32(dtype, got_bytes.data(), got.data(), n);
  Bytes rounded(n * mto::dtype_size(dtype));
  mto::from_float32(dtype, ref_f32.data(), rounded.data(), n);
  mto::to_float32(dtype, rounded.data(), ref.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const double g = got[i], w = ref[i];
    const double tol = tolerance * (1.0 + std::fabs(w)) + ulp_at(dtype, std::max(std::fabs(g), std::fabs(w))) +
                       (slack ? (*slack)[i] : 0.0);
    const double err = std::fabs(g - w);
    // NaN = NaN and inf = inf of the same sign; a tolerance only between finite values (an
    // infinite reference would make it infinite, and any value would pass).
    const bool good = (std::isnan(g) && std::isnan(w)) || g == w ||
                      (std::isfinite(g) && std::isfinite(w) && err <= tol);
    if (std::isfinite(err)) {
      c.max_abs_err = std::max(c.max_abs_err, err);
      c.worst_ratio = std::max(c.worst_ratio, err / tol);
    }
    if (good) continue;
    if (c.mismatches++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "%s[%lld, %lld]: kernel %.9g, cpu %.9g (tolerance %.3g)", what,
                    (long long)(int64_t(i) / row_width), (long long)(int64_t(i) % row_width), g, w,
                    tol);
      c.first_mismatch = buf;
    }
  }
  c.ok = c.mismatches == 0;
  return c;
}

Case catches_misuse(const std::string& kind, const mto::plan::Dispatch& plan,
                    std::map<mto::plan::Arg, Bytes> inputs, std::map<mto::plan::Arg, size_t> outputs) {
  return {"harness/catches/" + kind + "/" + plan.kernel, [=](const std::string& variant) {
            CaseResult r;
            r.op = "harness";
            r.kernel = plan.kernel;
            r.grid = dims_json(plan.threadgroups);
            r.threads = dims_json(plan.threads_per_threadgroup);
            std::string seen;
            for (int pass = 0; pass < 2; ++pass) {
              mtoh::RunOptions opt;
              opt.align_end = pass == 0;
              opt.reverse_order = pass == 1;
              const PlanRun run = execute_plan(plan, variant, inputs, outputs, opt, 0xFF);
              if (!run.result.ok && run.result.kind == kind) {
                r.ok = true;
                r.message = run.result.message;
                return r;
              }
              seen += " pass " + std::to_string(pass + 1) + ": " +
                      (run.result.ok ? std::string("no error") : run.result.kind + " (" + run.result.message + ")");
            }
            r.error_kind = "not_detected";
            r.message = "expected the harness to report " + kind + ";" + seen;
            return r;
          }};
}

}  // namespace mtoh_driver
