// groupRows on the GPU (shaders/group_rows.metal: the count, scan and scatter passes) against the
// cpu backend's counting sort (native/cpu/pick.cc group_rows): sizes, rows and positions equal bit
// for bit, for ids [T, k] and [T] of odd sizes, one chunk and many (entries past 256), more groups
// than a scan block (256) and than entries (empty groups), one group holding every entry, a
// single group; ids outside [0, groups) (past the end, negative, in a later chunk) must give the
// cpu backend's E_ARG through the status buffer, and are placed nowhere (position -1). And
// plan/group-rows: what the plan refuses.
#include <cstring>
#include <functional>

#include "cases.h"
#include "core/error.h"
#include "core/plan/group_rows.h"
#include "cpu/ops.h"
#include "data.h"
#include "model_data.h"

namespace mtoh_driver {
namespace {

using mto::DType;
using mto::plan::Arg;

enum class Ids { Random, Skewed, OneGroup };

struct GroupRowsCase {
  int64_t T, k;  // k = 0: ids of shape [T] (one entry per row)
  int64_t groups;
  Ids pattern;
  std::vector<std::pair<int64_t, int32_t>> bad;  // (flat index, id) planted outside [0, groups)
};

Comparison mismatch(const std::string& what) {
  Comparison c;
  c.ok = false;
  c.mismatches = 1;
  c.first_mismatch = what;
  return c;
}

Bytes bytes_of(const mto::Buffer& b) {
  const auto* p = static_cast<const unsigned char*>(b.data());
  return Bytes(p, p + b.bytes());
}

// The first int32 that differs, named; empty when equal.
std::string first_difference(const Bytes& got, const Bytes& want, const char* what) {
  if (got.size() != want.size()) return std::string(what) + ": sizes differ";
  for (size_t i = 0; i < got.size() / 4; ++i) {
    int32_t a, b;
    std::memcpy(&a, got.data() + 4 * i, 4);
    std::memcpy(&b, want.data() + 4 * i, 4);
    if (a != b) return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(a) + ", cpu " + std::to_string(b);
  }
  return "";
}

CaseResult run_case(const GroupRowsCase& c, const std::string& name, const std::string& variant) {
  const uint64_t seed = seed_of(name);
  const int64_t k = c.k == 0 ? 1 : c.k;
  const int64_t n = c.T * k;
  mto::Tensor ids;
  ids.shape = c.k == 0 ? mto::Shape{c.T} : mto::Shape{c.T, c.k};
  ids.dtype = DType::Int32;
  ids.buffer = mto::make_buffer(size_t(n) * 4);
  auto* id = static_cast<int32_t*>(ids.buffer->data());
  Rng rng(seed);
  const int hot = rng.range(0, int(c.groups - 1));
  for (int64_t i = 0; i < n; ++i) {
    switch (c.pattern) {
      case Ids::Random: id[i] = int32_t(rng.range(0, int(c.groups - 1))); break;
      // Most entries in one group, the rest spread: long runs of one id inside a chunk.
      case Ids::Skewed: id[i] = rng.range(0, 3) != 0 ? hot : int32_t(rng.range(0, int(c.groups - 1))); break;
      case Ids::OneGroup: id[i] = int32_t(c.groups - 1); break;
    }
  }
  for (const auto& [at, value] : c.bad) id[at] = value;

  const mto::GroupRowsParams p = mto::check_group_rows(ids, c.groups);
  mto::Tensor sizes = model::empty_tensor({c.groups}, DType::Int32);
  mto::Tensor rows = model::empty_tensor({n}, DType::Int32);
  mto::Tensor positions = model::empty_tensor(ids.shape, DType::Int32);
  std::string cpu_error;
  try {
    mto::cpu::group_rows(ids, p, sizes, rows, positions);
  } catch (const mto::Error& e) {
    cpu_error = std::string(e.code()) + ": " + e.what();
  }
  const mto::plan::GroupRowsPlan plan = mto::plan::plan_group_rows(p, mto::Tier::Simdgroup);

  CaseResult r;
  r.op = "groupRows";
  for (const auto& d : plan.passes) r.kernel += (r.kernel.empty() ? "" : "+") + d.kernel;
  r.grid = dims_json(plan.passes[0].threadgroups);
  r.threads = dims_json(plan.passes[0].threads_per_threadgroup);
  // What each pass writes: the counts (fresh), the sizes, status and counts again (in place),
  // then rows and positions. Everything a pass binds that an earlier one wrote is its input.
  const std::vector<std::map<Arg, size_t>> writes = {
      {{Arg::GroupSlots, size_t(plan.counts_bytes)}},
      {{Arg::GroupSizes, sizes.bytes()}, {Arg::Status, size_t(mto::plan::kGroupRowsStatusBytes)},
       {Arg::GroupSlots, size_t(plan.counts_bytes)}},
      {{Arg::Rows, rows.bytes()}, {Arg::Positions, positions.bytes()}}};
  std::map<Arg, Bytes> first;
  for (int i = 0; i < 2; ++i) {
    const PlanPass& pass = kPlanPasses[i];
    mtoh::RunOptions opt;
    opt.align_end = pass.align_end;
    opt.reverse_order = pass.reverse;
    opt.threadgroup_poison = pass.threadgroup_poison;
    std::map<Arg, Bytes> mem = {{Arg::Ids, bytes_of(*ids.buffer)}};
    for (size_t s = 0; s < plan.passes.size(); ++s) {
      std::map<Arg, Bytes> in;
      for (const auto& slot : plan.passes[s].buffers)
        if (mem.count(slot.arg)) in[slot.arg] = mem.at(slot.arg);
      PlanRun run = execute_plan(plan.passes[s], variant, in, writes[s], opt, pass.output_poison);
      if (!run.result.ok) {
        r.error_kind = run.result.kind;
        r.message = run.result.message + " [" + plan.passes[s].kernel + "]" + pass.name;
        return r;
      }
      for (auto& [arg, bytes] : run.outputs) mem[arg] = std::move(bytes);
    }
    int32_t status[2];
    std::memcpy(status, mem.at(Arg::Status).data(), sizeof status);
    const mto::OpStatus st = mto::plan::group_rows_status(status, p);
    const std::string gpu_error = st.ok() ? "" : std::string(st.code) + ": " + st.message;
    std::string diff;
    if (gpu_error != cpu_error) {
      diff = "status: kernel '" + gpu_error + "', cpu '" + cpu_error + "'";
    } else if (cpu_error.empty()) {
      diff = first_difference(mem.at(Arg::GroupSizes), bytes_of(*sizes.buffer), "sizes");
      if (diff.empty()) diff = first_difference(mem.at(Arg::Positions), bytes_of(*positions.buffer), "positions");
      if (diff.empty()) diff = first_difference(mem.at(Arg::Rows), bytes_of(*rows.buffer), "rows");
    } else {
      // A failed op's outputs are not defined, but the kernel places a bad entry nowhere: its
      // position is -1 (group_rows.metal's scatter pass).
      for (const auto& [at, value] : c.bad) {
        int32_t got;
        std::memcpy(&got, mem.at(Arg::Positions).data() + 4 * size_t(at), 4);
        if (got != -1) {
          diff = "positions[" + std::to_string(at) + "] (id " + std::to_string(value) + ") = " + std::to_string(got) + ", not -1";
          break;
        }
      }
    }
    if (!diff.empty()) {
      r.compare = mismatch(diff);
      r.error_kind = "mismatch";
      r.message = diff + pass.name;
      return r;
    }
    // The outputs of a failed op are not defined; a successful one's must agree bit for bit.
    std::map<Arg, Bytes> kept = {{Arg::Status, mem.at(Arg::Status)}};
    if (cpu_error.empty())
      for (Arg a : {Arg::GroupSizes, Arg::Rows, Arg::Positions}) kept[a] = mem.at(a);
    if (i == 0) {
      first = kept;
    } else if (first != kept) {
      r.error_kind = "nondeterministic";
      r.message = "the two passes produced different bits (a race, or a read of unwritten memory)";
      return r;
    }
  }
  r.ok = true;
  return r;
}

CaseResult plan_rules() {
  using model::expect_error;
  auto params = [](int64_t T, int64_t k, int64_t groups) {
    mto::GroupRowsParams p;
    p.rows = T;
    p.k = k;
    p.groups = groups;
    return p;
  };
  auto plan = [&](int64_t T, int64_t k, int64_t groups, mto::Tier tier = mto::Tier::Simdgroup) {
    return mto::plan::plan_group_rows(params(T, k, groups), tier);
  };
  // "" when `make` plans, else its error.
  auto planned = [](const std::function<void()>& make) -> std::string {
    try {
      make();
    } catch (const mto::Error& e) {
      return std::string("threw ") + e.code() + ": " + e.what();
    }
    return "";
  };
  std::string picks;
  {
    const auto g = plan(300, 4, 7);  // 1200 entries: 5 chunks
    if (g.passes.size() != 3 || g.passes[0].kernel != "group_rows_count" || g.passes[1].kernel != "group_rows_scan" ||
        g.passes[2].kernel != "group_rows_scatter" || g.passes[0].threadgroups[0] != 5 ||
        g.passes[1].threadgroups[0] != 1 || g.passes[2].threadgroups[0] != 5 || g.counts_bytes != 5 * 7 * 4) {
      picks = "300x4 entries over 7 groups: not count(5) + scan(1) + scatter(5) over 5 x 7 counts";
    }
    for (const auto& d : g.passes)
      if (d.threads_per_threadgroup[0] != 256 || d.tier != mto::Tier::Simdgroup) picks = d.kernel + ": not 256 threads, simdgroup tier";
  }
  return model::rule_checks({
      {"the passes and their grids", picks},
      {"no entries", expect_error("E_SHAPE", [&] { plan(0, 8, 4); })},
      {"4096 chunks x 1024 groups (the largest scratch)", planned([&] { plan(4096 * 256, 1, 1024); })},
      {"more chunks x groups than the scan takes", expect_error("E_SHAPE", [&] { plan(4096 * 256 + 1, 1, 1024); })},
      {"2^31 entries", expect_error("E_SHAPE", [&] { plan(int64_t(1) << 30, 2, 1); })},
      {"the cpu tier", expect_error("E_BACKEND", [&] { plan(4, 2, 4, mto::Tier::Cpu); })},
  });
}

}  // namespace

std::vector<Case> group_rows_cases() {
  std::vector<Case> cases;
  auto add = [&](const GroupRowsCase& c) {
    std::string name = "group-rows/T" + std::to_string(c.T) + (c.k ? ".k" + std::to_string(c.k) : "") + "/G" +
                       std::to_string(c.groups) + "/" +
                       (c.pattern == Ids::Random ? "random" : c.pattern == Ids::Skewed ? "skewed" : "one_group");
    if (!c.bad.empty()) name += "/out_of_range";
    cases.push_back({name, [=](const std::string& v) { return run_case(c, name, v); }});
  };
  add({1, 8, 128, Ids::Random, {}});       // a decode step: 8 experts of 128
  add({7, 2, 5, Ids::Random, {}});
  add({37, 0, 3, Ids::Random, {}});        // ids [T]
  add({5, 3, 1, Ids::Random, {}});         // one group
  add({3, 2, 1000, Ids::Random, {}});      // more groups than entries and than a scan block
  add({300, 4, 7, Ids::Skewed, {}});       // 5 chunks, long runs
  add({1000, 3, 300, Ids::Random, {}});    // 12 chunks, two scan blocks
  add({257, 0, 64, Ids::Skewed, {}});      // a chunk of one entry
  add({129, 2, 33, Ids::OneGroup, {}});    // every entry in the last group
  add({9, 2, 5, Ids::Random, {{3, 5}, {7, -1}}});
  add({37, 0, 3, Ids::Random, {{36, -2147483647 - 1}}});
  add({600, 2, 4, Ids::Random, {{700, 4}}});  // in the third chunk
  add({3, 1, 1, Ids::Random, {{0, 1}}});      // past the end of a one-chunk scratch
  cases.push_back({"plan/group-rows", [](const std::string&) { return plan_rules(); }});
  return cases;
}

}  // namespace mtoh_driver
