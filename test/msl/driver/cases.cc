// run_plan_case and the JSON form of a result (cases.h).
#include <cstdio>
#include <cstring>

#include "cases.h"

namespace mtoh_driver {

CaseResult run_plan_case(const std::string& op, const mto::plan::Dispatch& plan,
                         const std::string& variant, const std::map<mto::plan::Arg, Bytes>& inputs,
                         const std::map<mto::plan::Arg, size_t>& output_sizes, const Compare& compare) {
  CaseResult r;
  r.op = op;
  r.kernel = plan.kernel;
  r.grid = dims_json(plan.threadgroups);
  r.threads = dims_json(plan.threads_per_threadgroup);

  struct Pass {
    bool align_end, reverse;
    unsigned char output_poison, threadgroup_poison;
  };
  // 0xFF bytes are NaN floats; 0x7F bytes are a large finite float (3.4e38): an element left
  // unwritten cannot match the reference under both.
  const Pass passes[2] = {{true, false, 0xFF, 0xFF}, {false, true, 0x7F, 0x7F}};
  std::map<mto::plan::Arg, Bytes> first;
  for (int i = 0; i < 2; ++i) {
    mtoh::RunOptions opt;
    opt.align_end = passes[i].align_end;
    opt.reverse_order = passes[i].reverse;
    opt.threadgroup_poison = passes[i].threadgroup_poison;
    PlanRun run = execute_plan(plan, variant, inputs, output_sizes, opt, passes[i].output_poison);
    const std::string pass_name = i == 0 ? " (pass 1: regions end at their guard page)"
                                         : " (pass 2: regions start at their guard page, threads in reverse)";
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
       ", \"mismatches\": " + std::to_string(r.compare.mismatches) + ", \"ms\": " + num(r.ms) + "}";
  return j;
}

}  // namespace mtoh_driver
