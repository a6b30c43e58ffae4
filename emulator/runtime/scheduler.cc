// Threadgroup execution: fibers, rendezvous resolution and the divergence checks (scheduler.h).
#include "scheduler.h"

#include <cstdlib>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>

namespace mtoh {
namespace {

// Each fiber's stack. Kernels keep small arrays in registers on a GPU; 128 KiB is generous here.
constexpr size_t kFiberStackBytes = 128 * 1024;

thread_local ThreadgroupRunner* tls_runner = nullptr;
// Stacks are reused by every launch on this OS thread (mapping them is the slow part), one set per
// runner slot (two threadgroups of a launch run interleaved: launch.cc).
thread_local std::vector<std::unique_ptr<FiberStack>> tls_stacks[ThreadgroupRunner::kSlots];

bool same_site(const Site& a, const Site& b) {
  return a.line == b.line && a.column == b.column && std::strcmp(a.file, b.file) == 0 &&
         std::strcmp(a.what, b.what) == 0;
}

std::string site_text(const Site& s) {
  // A lane that has not reached any such operation yet has an empty site.
  if (!s.what) return "nothing yet";
  return std::string(s.what) + " at " + (s.file ? s.file : "?") + ":" + std::to_string(s.line);
}

// "0-31, 40, 64-127"
std::string ranges(const std::vector<uint32_t>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ", ";
    out += std::to_string(v[i]);
    if (j > i) out += "-" + std::to_string(v[j]);
    i = j + 1;
  }
  return out;
}

}  // namespace

const BoundRegion* LaunchState::find_buffer(int index) const {
  for (const auto& b : buffers)
    if (b.index == index) return &b;
  return nullptr;
}

ThreadgroupRunner::ThreadgroupRunner(const LaunchState& launch, uint32_t slot) : launch_(launch), slot_(slot) {
  const auto& t = launch.geometry.threads;
  threads_ = t[0] * t[1] * t[2];
  simdgroups_ = (threads_ + kSimdWidth - 1) / kSimdWidth;
  lanes_.resize(threads_);
  pointer_slots_.resize(threads_);
  simd_.resize(simdgroups_);
  auto& tls_stacks = mtoh::tls_stacks[slot_];
  while (tls_stacks.size() < threads_) tls_stacks.push_back(std::make_unique<FiberStack>(kFiberStackBytes));
  for (const auto& [index, bytes] : launch.threadgroup_memory)
    dynamic_.push_back(std::make_unique<GuardedRegion>(bytes, launch.options.align_end));
}

ThreadgroupRunner::~ThreadgroupRunner() = default;

ThreadgroupRunner* ThreadgroupRunner::current() { return tls_runner; }

const ThreadIds& ThreadgroupRunner::ids() const { return lanes_[running_].ids; }

std::string ThreadgroupRunner::thread_name(uint32_t lane) const {
  const ThreadIds& id = lanes_[lane].ids;
  char buf[160];
  std::snprintf(buf, sizeof buf, "thread %u (simdgroup %u lane %u) of threadgroup (%u,%u,%u)",
                id.thread_index_in_threadgroup, id.simdgroup_index_in_threadgroup,
                id.thread_index_in_simdgroup, group_[0], group_[1], group_[2]);
  return buf;
}

void ThreadgroupRunner::fiber_entry() {
  ThreadgroupRunner* self = tls_runner;
  const uint32_t me = self->running_;
  self->launch_.kernel->entry(ThreadArgs());
  self->lanes_[me].wait = Wait::Done;
  context_switch(&self->lanes_[me].ctx, &self->scheduler_);
  __builtin_trap();  // a finished fiber is never resumed
}

void ThreadgroupRunner::fail(const std::string& kind, const std::string& message) {
  failed_ = true;
  result_.ok = false;
  result_.kind = kind;
  result_.message = message;
  context_switch(&lanes_[running_].ctx, &scheduler_);
  __builtin_trap();  // a failed threadgroup is abandoned, its fibers never resumed
}

void ThreadgroupRunner::block(Wait wait, const Site& site) {
  Lane& lane = lanes_[running_];
  lane.wait = wait;
  lane.site = site;
  context_switch(&lane.ctx, &scheduler_);
}

const SimdView& ThreadgroupRunner::simd_exchange(const void* value, size_t bytes, const Site& site) {
  Lane& lane = lanes_[running_];
  std::memset(lane.posted, 0, sizeof lane.posted);
  std::memcpy(lane.posted, value, std::min(bytes, sizeof lane.posted));
  block(Wait::SimdOp, site);
  return simd_[lane.ids.simdgroup_index_in_threadgroup].view;
}

void ThreadgroupRunner::barrier(const Site& site, bool simd_only) {
  block(simd_only ? Wait::SimdBarrier : Wait::Barrier, site);
}

void ThreadgroupRunner::count_matrix_op(const Site& site, uint64_t args) {
  Lane& lane = lanes_[running_];
  ++lane.matrix_ops;
  lane.matrix_site = site;
  uint64_t h = lane.matrix_fingerprint ^ (uint64_t(site.line) << 32 | uint32_t(site.column));
  h = (h ^ args) * 0x9E3779B97F4A7C15ull;
  lane.matrix_fingerprint = h ^ (h >> 29);
}

size_t ThreadgroupRunner::threadgroup_bytes_in_use() const {
  size_t total = 0;
  for (const auto& a : arrays_) total += a.bytes;
  for (const auto& [index, bytes] : launch_.threadgroup_memory) total += bytes;
  return total;
}

void* ThreadgroupRunner::threadgroup_array(const void* key, const char* name, size_t bytes, size_t align) {
  for (auto& a : arrays_) {
    if (a.key != key) continue;
    if (!a.fresh) {
      std::memset(a.region->data(), launch_.options.threadgroup_poison, a.bytes);
      a.fresh = true;
    }
    return a.region->data();
  }
  // Round the size up to the alignment so an end-aligned region starts aligned too.
  const size_t padded = (bytes + align - 1) / align * align;
  TgArray a{key, name, padded, std::make_unique<GuardedRegion>(padded, launch_.options.align_end), true};
  std::memset(a.region->data(), launch_.options.threadgroup_poison, padded);
  arrays_.push_back(std::move(a));
  const size_t total = threadgroup_bytes_in_use();
  if (total > kThreadgroupMemoryLimit) {
    fail("threadgroup_memory_limit",
         "threadgroup memory " + std::to_string(total) + " bytes (array '" + name + "' adds " +
             std::to_string(padded) + ") exceeds the " + std::to_string(kThreadgroupMemoryLimit) +
             "-byte limit of Apple GPUs");
  }
  return arrays_.back().region->data();
}

void* ThreadgroupRunner::dynamic_threadgroup_memory(int index, size_t* bytes) {
  for (size_t i = 0; i < launch_.threadgroup_memory.size(); ++i) {
    if (launch_.threadgroup_memory[i].first != index) continue;
    *bytes = launch_.threadgroup_memory[i].second;
    return dynamic_[i]->data();
  }
  *bytes = 0;
  return nullptr;
}

// Lanes of one SIMD-group must have executed the same number of simdgroup_matrix operations
// whenever they meet (the operations are SIMD-group-wide on the GPU).
bool ThreadgroupRunner::check_matrix_uniform(const std::vector<uint32_t>& lanes, const char* when) {
  std::map<uint32_t, std::vector<uint32_t>> by_simd;
  for (uint32_t l : lanes) by_simd[lanes_[l].ids.simdgroup_index_in_threadgroup].push_back(l);
  for (const auto& [s, ls] : by_simd) {
    for (uint32_t l : ls) {
      const Lane &a = lanes_[ls[0]], &b = lanes_[l];
      if (a.matrix_ops == b.matrix_ops && a.matrix_fingerprint == b.matrix_fingerprint) continue;
      const std::string what =
          a.matrix_ops != b.matrix_ops
              ? "executed " + std::to_string(a.matrix_ops) + " and " + std::to_string(b.matrix_ops) +
                    " operations"
              : "executed different operations or passed different pointers, strides or values";
      result_ = {false, "divergent_simdgroup_matrix",
                 "simdgroup_matrix operations must be SIMD-group-uniform: " + std::string(when) +
                     ", lanes " + std::to_string(a.ids.thread_index_in_simdgroup) + " and " +
                     std::to_string(b.ids.thread_index_in_simdgroup) + " of simdgroup " +
                     std::to_string(s) + " " + what + " (their last: " + site_text(a.matrix_site) +
                     "; " + site_text(b.matrix_site) + ") in threadgroup (" + std::to_string(group_[0]) + "," +
                     std::to_string(group_[1]) + "," + std::to_string(group_[2]) + ")"};
      failed_ = true;
      return false;
    }
  }
  return true;
}

// The reverse pass runs SIMD-group by SIMD-group (see run) unless MTOH_SCHEDULE=lockstep.
static bool simd_major_schedule() {
  static const bool on = [] {
    const char* v = std::getenv("MTOH_SCHEDULE");
    return !(v && std::string(v) == "lockstep");
  }();
  return on;
}

// Resolves SIMD-group `s` if all its live lanes wait at SIMD-group rendezvous. Returns false on error.
bool ThreadgroupRunner::resolve_simdgroup(uint32_t s, bool* progressed) {
  const uint32_t first = s * kSimdWidth, last = std::min(threads_, first + kSimdWidth);
  std::vector<uint32_t> live;
  bool all_simd = true;
  for (uint32_t l = first; l < last; ++l) {
    if (lanes_[l].wait == Wait::Done) continue;
    live.push_back(l);
    all_simd = all_simd && (lanes_[l].wait == Wait::SimdOp || lanes_[l].wait == Wait::SimdBarrier);
  }
  if (live.empty() || !all_simd) return true;
  const Lane& lead = lanes_[live[0]];
  for (uint32_t l : live) {
    if (lanes_[l].wait == lead.wait && same_site(lanes_[l].site, lead.site)) continue;
    std::vector<uint32_t> a, b;
    for (uint32_t m : live) (same_site(lanes_[m].site, lead.site) ? a : b).push_back(m - first);
    result_ = {false, "divergent_simd",
               "SIMD-group operation in divergent control flow in simdgroup " + std::to_string(s) +
                   " of threadgroup (" + std::to_string(group_[0]) + "," + std::to_string(group_[1]) +
                   "," + std::to_string(group_[2]) + "): lanes " + ranges(a) + " at " +
                   site_text(lead.site) + ", lanes " + ranges(b) + " at " + site_text(lanes_[l].site)};
    failed_ = true;
    return false;
  }
  if (!check_matrix_uniform(live, ("at " + site_text(lead.site)).c_str())) return false;
  SimdState& st = simd_[s];
  st.view.active_mask = 0;
  for (int i = 0; i < kSimdWidth; ++i) st.view.value[i] = nullptr;
  for (uint32_t l : live) {
    const uint32_t lane = l - first;
    std::memcpy(st.snapshot[lane], lanes_[l].posted, kMaxSimdValueBytes);
    st.view.value[lane] = st.snapshot[lane];
    st.view.active_mask |= 1u << lane;
    lanes_[l].wait = Wait::Runnable;
  }
  *progressed = true;
  return true;
}

bool ThreadgroupRunner::resolve() {
  bool progressed = false;
  for (uint32_t s = 0; s < simdgroups_; ++s)
    if (!resolve_simdgroup(s, &progressed)) return false;
  if (progressed) return true;

  // Nothing SIMD-group-local can proceed: only a threadgroup barrier reached by all can.
  std::vector<uint32_t> done, at_barrier, elsewhere;
  for (uint32_t l = 0; l < threads_; ++l) {
    if (lanes_[l].wait == Wait::Done) done.push_back(l);
    else if (lanes_[l].wait == Wait::Barrier) at_barrier.push_back(l);
    else elsewhere.push_back(l);
  }
  const std::string where = " in threadgroup (" + std::to_string(group_[0]) + "," +
                            std::to_string(group_[1]) + "," + std::to_string(group_[2]) + ")";
  if (!elsewhere.empty()) {
    const Lane& w = lanes_[elsewhere[0]];
    const uint32_t s = w.ids.simdgroup_index_in_threadgroup;
    result_ = {false, "divergent_simd",
               "threads " + ranges(elsewhere) + " wait at " + site_text(w.site) +
                   " for lanes of simdgroup " + std::to_string(s) +
                   " that wait at a threadgroup barrier (threads " + ranges(at_barrier) + ")" + where};
    failed_ = true;
    return false;
  }
  const Site& site = lanes_[at_barrier[0]].site;
  if (!done.empty()) {
    result_ = {false, "barrier_after_return",
               site_text(site) + " reached by threads " + ranges(at_barrier) + " of " +
                   std::to_string(threads_) + "; threads " + ranges(done) +
                   " had returned (a barrier must be reached by every thread)" + where};
    failed_ = true;
    return false;
  }
  for (uint32_t l : at_barrier) {
    if (same_site(lanes_[l].site, site)) continue;
    std::vector<uint32_t> a, b;
    for (uint32_t m : at_barrier) (same_site(lanes_[m].site, site) ? a : b).push_back(m);
    result_ = {false, "divergent_barrier",
               "threadgroup barrier in divergent control flow: threads " + ranges(a) + " at " +
                   site_text(site) + ", threads " + ranges(b) + " at " + site_text(lanes_[l].site) + where};
    failed_ = true;
    return false;
  }
  if (!check_matrix_uniform(at_barrier, ("at " + site_text(site)).c_str())) return false;
  for (uint32_t l : at_barrier) lanes_[l].wait = Wait::Runnable;
  return true;
}

std::string ThreadgroupRunner::describe_fault(const FaultTrap& trap) const {
  const std::string who = " by " + thread_name(running_);
  const std::string access = fault_access(trap);
  auto where = [&](const std::string& what, long offset, size_t bytes) {
    // Byte 1 past the end is the first byte after the region; byte 1 before the start the last one
    // before it.
    std::string pos;
    if (offset < 0) pos = "byte " + std::to_string(-offset) + " before the start";
    else pos = "byte " + std::to_string(offset - long(bytes) + 1) + " past the end";
    return "out-of-bounds " + access + " of " + what + " (" + std::to_string(bytes) +
           " bytes) at byte offset " + std::to_string(offset) + ", " + pos + who;
  };
  long off = 0;
  for (const auto& b : launch_.buffers) {
    const std::string what = "buffer(" + std::to_string(b.index) + ") '" + b.name + "'";
    if (b.region->owns(trap.address, &off))
      return where(b.is_tensor ? what + " data plane" : what, off, b.region->bytes());
    if (b.scales && b.scales->owns(trap.address, &off)) return where(what + " scale plane", off, b.scales->bytes());
  }
  for (const auto& a : arrays_)
    if (a.region->owns(trap.address, &off)) return where("threadgroup array '" + a.name + "'", off, a.bytes);
  for (size_t i = 0; i < dynamic_.size(); ++i)
    if (dynamic_[i]->owns(trap.address, &off))
      return where("threadgroup(" + std::to_string(launch_.threadgroup_memory[i].first) + ") memory", off,
                   dynamic_[i]->bytes());
  const auto& tls_stacks = mtoh::tls_stacks[slot_];
  for (size_t i = 0; i < tls_stacks.size(); ++i) {
    const char* a = static_cast<const char*>(trap.address);
    if (a >= tls_stacks[i]->guard_begin() && a < tls_stacks[i]->guard_end())
      return "stack overflow (more than " + std::to_string(kFiberStackBytes) + " bytes)" + who;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%p", trap.address);
  return std::string(trap.signal == SIGFPE ? "arithmetic fault (SIGFPE)" : "invalid memory access") +
         " at address " + buf + who;
}

void ThreadgroupRunner::start(const uint32_t group[3]) {
  const Geometry& g = launch_.geometry;
  for (int i = 0; i < 3; ++i) group_[i] = group[i];
  for (auto& a : arrays_) a.fresh = false;
  for (size_t i = 0; i < dynamic_.size(); ++i)
    std::memset(dynamic_[i]->data(), launch_.options.threadgroup_poison, dynamic_[i]->bytes());
  for (uint32_t l = 0; l < threads_; ++l) {
    ThreadIds& id = lanes_[l].ids;
    const uint32_t tx = g.threads[0], ty = g.threads[1];
    const uint32_t pos[3] = {l % tx, (l / tx) % ty, l / (tx * ty)};
    for (int i = 0; i < 3; ++i) {
      id.thread_position_in_threadgroup[i] = pos[i];
      id.threadgroup_position_in_grid[i] = group[i];
      id.threads_per_threadgroup[i] = g.threads[i];
      id.threadgroups_per_grid[i] = g.threadgroups[i];
      id.threads_per_grid[i] = g.threads[i] * g.threadgroups[i];
      id.thread_position_in_grid[i] = group[i] * g.threads[i] + pos[i];
    }
    id.thread_index_in_threadgroup = l;
    id.simdgroup_index_in_threadgroup = l / kSimdWidth;
    id.thread_index_in_simdgroup = l % kSimdWidth;
    id.simdgroups_per_threadgroup = simdgroups_;
    id.threads_per_simdgroup = kSimdWidth;
    lanes_[l].wait = Wait::Runnable;
    lanes_[l].matrix_ops = 0;
    lanes_[l].matrix_fingerprint = 0;
    tls_stacks[slot_][l]->start(&lanes_[l].ctx, &ThreadgroupRunner::fiber_entry);
  }
  failed_ = false;
  finished_ = false;
  result_ = RunResult();
}

bool ThreadgroupRunner::step() {
  if (finished_) return true;
  ThreadgroupRunner* const saved = tls_runner;
  tls_runner = this;
  FaultTrap trap;
  prepare_fault_handling();
  if (sigsetjmp(trap.jump, 1) == 0) {
    arm_fault_trap(&trap);
    finished_ = advance();
  } else {
    const std::string message = describe_fault(trap);
    const bool oob = message.rfind("out-of-bounds", 0) == 0;
    result_ = {false, oob ? "out_of_bounds" : "crash", message};
    finished_ = true;
  }
  arm_fault_trap(nullptr);
  tls_runner = saved;
  return finished_;
}

bool ThreadgroupRunner::advance() {
  bool all_done = true;
  if (launch_.options.reverse_order && simd_major_schedule()) {
    // SIMD-groups one at a time: each runs, its own rendezvous resolved at once, until it waits
    // at a threadgroup barrier or returns. One SIMD-group then gets as far ahead of the others as
    // the barriers allow, which the lockstep order below never lets happen (a SIMD-group
    // overwriting a threadgroup slot that another has yet to read). Which one goes first turns
    // with the threadgroup (the last first in threadgroup 0, then the one before, ...), so that
    // each SIMD-group is the one ahead somewhere: a slot that SIMD-group 0 alone rewrites (a flag
    // thread 0 clears) is caught as well as one the last rewrites.
    const uint32_t turn = (group_[0] + group_[1] + group_[2]) % simdgroups_;
    for (uint32_t k = 0; k < simdgroups_ && !failed_; ++k) {
      const uint32_t g = (2 * simdgroups_ - 1 - turn - k) % simdgroups_;
      const uint32_t first = g * kSimdWidth, last = std::min(threads_, first + kSimdWidth);
      for (bool progressed = true; progressed && !failed_;) {
        for (uint32_t l = last; l-- > first && !failed_;) {
          if (lanes_[l].wait != Wait::Runnable) continue;
          running_ = l;
          context_switch(&scheduler_, &lanes_[l].ctx);
        }
        progressed = false;
        if (!failed_ && !resolve_simdgroup(g, &progressed)) break;
      }
    }
    for (uint32_t l = 0; l < threads_; ++l) all_done = all_done && lanes_[l].wait == Wait::Done;
  } else {
    for (uint32_t k = 0; k < threads_ && !failed_; ++k) {
      const uint32_t l = launch_.options.reverse_order ? threads_ - 1 - k : k;
      if (lanes_[l].wait == Wait::Runnable) {
        running_ = l;
        context_switch(&scheduler_, &lanes_[l].ctx);
      }
      all_done = all_done && lanes_[l].wait == Wait::Done;
    }
  }
  if (failed_) return true;
  if (all_done) {
    std::vector<uint32_t> all(threads_);
    for (uint32_t l = 0; l < threads_; ++l) all[l] = l;
    check_matrix_uniform(all, "at the end of the kernel");
    return true;
  }
  return !resolve();
}

// ---- The bridge (bridge.h): the shim's entry points, forwarded to the running threadgroup.

const ThreadIds& current_ids() { return tls_runner->ids(); }
bool coop_row_blocks() {
  const RunOptions& o = tls_runner->launch().options;
  return o.reverse_order && o.row_blocks_in_reverse;
}
const SimdView& simd_exchange(const void* value, size_t bytes, const Site& site) {
  return tls_runner->simd_exchange(value, bytes, site);
}
void threadgroup_barrier(const Site& site) { tls_runner->barrier(site, false); }
void simdgroup_barrier(const Site& site) { tls_runner->barrier(site, true); }
void* threadgroup_array(const void* key, const char* name, size_t bytes, size_t align) {
  return tls_runner->threadgroup_array(key, name, bytes, align);
}
const void** threadgroup_pointer_slots() { return tls_runner->pointer_slots(); }
void count_simdgroup_matrix_op(const Site& site, uint64_t args) { tls_runner->count_matrix_op(site, args); }
void kernel_error(const char* kind, const char* message) { tls_runner->fail(kind, message); }

}  // namespace mtoh
