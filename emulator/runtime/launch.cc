// The kernel registry, argument binding and run_kernel (launch.h).
#include "launch.h"
#include "launch_tensors.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <tuple>

#include "scheduler.h"

namespace mtoh {
namespace {

std::mutex& registry_mutex() {
  static std::mutex m;
  return m;
}
// By (library, variant, host name): two libraries may define the same host name (the tensorops
// and tensorops-mx attention libraries, the probes' `probe`), as two Metal libraries can.
using RegistryKey = std::tuple<std::string, std::string, std::string>;
std::map<RegistryKey, KernelInfo>& registry() {
  static std::map<RegistryKey, KernelInfo> r;
  return r;
}

// The (library, variant) pairs that have kernels: a variant built for one library (a planted
// fault, a mutant) leaves the other libraries' kernels as they are.
std::set<std::pair<std::string, std::string>>& variants() {
  static std::set<std::pair<std::string, std::string>> v;
  return v;
}

// The libraries whose kernels this thread looked up since the last take_libraries_used().
thread_local std::set<std::string> t_libraries_used;

RunResult binding_error(const std::string& message) { return {false, "binding", message}; }

}  // namespace

void register_kernel(KernelInfo info) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  variants().emplace(info.library, info.variant);
  const RegistryKey key{info.library, info.variant, info.name};
  registry()[key] = std::move(info);
}

std::vector<std::string> take_libraries_used() {
  std::vector<std::string> out(t_libraries_used.begin(), t_libraries_used.end());
  t_libraries_used.clear();
  return out;
}

const KernelInfo* find_kernel(const std::string& library, const std::string& variant, const std::string& name) {
  std::lock_guard<std::mutex> lock(registry_mutex());
  t_libraries_used.insert(library);
  const bool built = variant.empty() || variants().count({library, variant}) > 0;
  auto it = registry().find(RegistryKey{library, built ? variant : std::string(), name});
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<const KernelInfo*> all_kernels() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  std::vector<const KernelInfo*> out;
  for (const auto& [key, info] : registry()) out.push_back(&info);
  return out;
}

// ---- Per-thread argument binding (called on a fiber, at kernel entry).

BufferArg ThreadArgs::buffer(int index) const {
  const BoundRegion* b = ThreadgroupRunner::current()->launch().find_buffer(index);
  // run_kernel checked that every declared index is bound; this is defensive.
  if (!b) ThreadgroupRunner::current()->fail("binding", "buffer(" + std::to_string(index) + ") is not bound");
  return BufferArg{b->region->data(), b->region->bytes(), index};
}

const TensorBinding& bound_tensor(int index) {
  ThreadgroupRunner* runner = ThreadgroupRunner::current();
  const BoundRegion* b = runner->launch().find_buffer(index);
  if (!b) runner->fail("binding", "buffer(" + std::to_string(index) + ") is not bound");
  if (!b->is_tensor) {
    runner->fail("binding", "buffer(" + std::to_string(index) + ") '" + b->name +
                                "' is a plain buffer, but the kernel declares a tensor argument there (the host must "
                                "bind an MTLTensor)");
  }
  b->taken_as_tensor = true;
  return b->tensor;
}

BufferArg ThreadArgs::threadgroup_memory(int index) const {
  size_t bytes = 0;
  void* p = ThreadgroupRunner::current()->dynamic_threadgroup_memory(index, &bytes);
  if (!p) {
    ThreadgroupRunner::current()->fail("binding", "threadgroup(" + std::to_string(index) +
                                                      ") memory length was not set");
  }
  return BufferArg{p, bytes, index};
}

AttrArg ThreadArgs::attr(Attr a) const {
  const ThreadIds& id = ThreadgroupRunner::current()->ids();
  auto vec3 = [](const uint32_t v[3]) { return AttrArg{{v[0], v[1], v[2]}}; };
  auto scalar = [](uint32_t v) { return AttrArg{{v, 0, 0}}; };
  switch (a) {
    case Attr::thread_position_in_grid: return vec3(id.thread_position_in_grid);
    case Attr::thread_position_in_threadgroup: return vec3(id.thread_position_in_threadgroup);
    case Attr::threadgroup_position_in_grid: return vec3(id.threadgroup_position_in_grid);
    case Attr::threads_per_threadgroup: return vec3(id.threads_per_threadgroup);
    case Attr::threadgroups_per_grid: return vec3(id.threadgroups_per_grid);
    case Attr::threads_per_grid: return vec3(id.threads_per_grid);
    case Attr::thread_index_in_threadgroup: return scalar(id.thread_index_in_threadgroup);
    case Attr::simdgroup_index_in_threadgroup: return scalar(id.simdgroup_index_in_threadgroup);
    case Attr::thread_index_in_simdgroup: return scalar(id.thread_index_in_simdgroup);
    case Attr::simdgroups_per_threadgroup: return scalar(id.simdgroups_per_threadgroup);
    case Attr::threads_per_simdgroup: return scalar(id.threads_per_simdgroup);
  }
  return scalar(0);
}

// Metal requires buffer offsets aligned to the element type the kernel reads.
void BufferArg::check_alignment(size_t align) const {
  if (reinterpret_cast<uintptr_t>(data) % align == 0) return;
  ThreadgroupRunner::current()->fail(
      "binding", "buffer(" + std::to_string(index) + ") is not aligned to the " +
                     std::to_string(align) + "-byte alignment of the type the kernel declares");
}

// A `constant Params& p [[buffer(n)]]` must be bound with at least sizeof(Params) bytes: this is
// where a host/kernel disagreement about a parameter struct shows up first.
void BufferArg::check_size(size_t bytes_needed) const {
  if (bytes >= bytes_needed) return;
  ThreadgroupRunner::current()->fail(
      "binding", "buffer(" + std::to_string(index) + ") holds " + std::to_string(bytes) +
                     " bytes but the kernel declares a " + std::to_string(bytes_needed) +
                     "-byte object there");
}

// ---- run_kernel

RunResult run_kernel(const KernelInfo& kernel, const Geometry& geometry,
                     std::vector<HostBuffer>& buffers,
                     const std::vector<std::pair<int, uint32_t>>& threadgroup_memory,
                     const RunOptions& options) {
  return run_kernel(kernel, geometry, buffers, {}, threadgroup_memory, options);
}

RunResult run_kernel(const KernelInfo& kernel, const Geometry& geometry, std::vector<HostBuffer>& buffers,
                     const std::vector<HostTensor>& tensors,
                     const std::vector<std::pair<int, uint32_t>>& threadgroup_memory, const RunOptions& options) {
  const auto& t = geometry.threads;
  const uint64_t threads = uint64_t(t[0]) * t[1] * t[2];
  if (threads == 0 || threads > 1024) {
    return binding_error("threads per threadgroup " + std::to_string(t[0]) + "x" + std::to_string(t[1]) +
                         "x" + std::to_string(t[2]) + " must be 1..1024 in total");
  }
  // As a Metal pipeline built with [[max_total_threads_per_threadgroup(n)]] refuses larger
  // threadgroups (its maxTotalThreadsPerThreadgroup is at most n).
  if (threads > kernel.max_total_threads) {
    return binding_error("threads per threadgroup " + std::to_string(threads) + " exceed " + kernel.name +
                         "'s max_total_threads_per_threadgroup(" + std::to_string(kernel.max_total_threads) + ")");
  }
  for (int i = 0; i < 3; ++i)
    if (geometry.threadgroups[i] == 0) return binding_error("a grid dimension is 0 threadgroups");

  // Every declared [[buffer(n)]] bound exactly once, and nothing the kernel does not declare.
  std::vector<int> bound;
  for (const auto& b : buffers) bound.push_back(b.index);
  for (const auto& t : tensors) bound.push_back(t.index);
  std::sort(bound.begin(), bound.end());
  if (std::adjacent_find(bound.begin(), bound.end()) != bound.end())
    return binding_error("a buffer index is bound twice");
  for (int idx : kernel.buffers)
    if (!std::binary_search(bound.begin(), bound.end(), idx))
      return binding_error(kernel.name + " declares buffer(" + std::to_string(idx) + ") but the plan binds nothing there");
  for (int idx : bound)
    if (std::find(kernel.buffers.begin(), kernel.buffers.end(), idx) == kernel.buffers.end())
      return binding_error("the plan binds buffer(" + std::to_string(idx) + ") which " + kernel.name + " does not declare");
  for (int idx : kernel.threadgroup_buffers) {
    bool found = false;
    for (const auto& tm : threadgroup_memory) found = found || tm.first == idx;
    if (!found) return binding_error(kernel.name + " declares threadgroup(" + std::to_string(idx) + ") but no length is set");
  }

  LaunchState launch;
  launch.kernel = &kernel;
  launch.geometry = geometry;
  launch.options = options;
  launch.threadgroup_memory = threadgroup_memory;
  for (const auto& b : buffers) {
    BoundRegion r;
    r.index = b.index;
    r.name = b.name;
    r.region = std::make_unique<GuardedRegion>(b.data.size(), options.align_end);
    if (!b.data.empty()) std::memcpy(r.region->data(), b.data.data(), b.data.size());
    launch.buffers.push_back(std::move(r));
  }
  for (const auto& h : tensors) {
    // A tensor: the handle the kernel's argument is built from, over planes of their own.
    BoundRegion r;
    r.index = h.index;
    r.name = h.name;
    r.region = std::make_unique<GuardedRegion>(h.data.size(), options.align_end);
    if (!h.data.empty()) std::memcpy(r.region->data(), h.data.data(), h.data.size());
    r.is_tensor = true;
    TensorBinding& t = r.tensor;
    t.data_type = h.data_type;
    t.rank = h.rank;
    for (int i = 0; i < 2; ++i) {
      t.dims[i] = h.dims[i];
      t.strides[i] = h.strides[i];
      t.block[i] = h.block[i];
    }
    t.data = r.region->data();
    t.data_bytes = r.region->bytes();
    t.scale_type = h.scale_type;
    if (t.scale_type != 0) {
      r.scales = std::make_unique<GuardedRegion>(h.scales.size(), options.align_end);
      if (!h.scales.empty()) std::memcpy(r.scales->data(), h.scales.data(), h.scales.size());
      t.scales = r.scales->data();
      t.scale_bytes = r.scales->bytes();
    }
    launch.buffers.push_back(std::move(r));
  }

  // Threadgroups run two at a time, interleaved rendezvous by rendezvous: on a GPU they run at
  // once, so a threadgroup that writes device memory another one uses between two of its barriers
  // (scratch shared by mistake) reads the other's values here too, as it would there.
  RunResult result;
  {
    const auto& n = geometry.threadgroups;
    std::vector<std::array<uint32_t, 3>> groups;
    for (uint32_t z = 0; z < n[2]; ++z)
      for (uint32_t y = 0; y < n[1]; ++y)
        for (uint32_t x = 0; x < n[0]; ++x) groups.push_back({x, y, z});
    ThreadgroupRunner first(launch, 0), second(launch, 1);
    for (size_t i = 0; i < groups.size() && result.ok; i += 2) {
      const bool pair = i + 1 < groups.size();
      first.start(groups[i].data());
      if (pair) second.start(groups[i + 1].data());
      bool done_first = false, done_second = !pair;
      while (!done_first || !done_second) {
        if (!done_first) done_first = first.step();
        if (done_first && !first.result().ok) break;
        if (!done_second) done_second = second.step();
        if (done_second && !second.result().ok) break;
      }
      result = !first.result().ok || !pair ? first.result() : second.result();
      // Every thread has built its arguments by now: a tensor that no parameter took as a
      // tensor was read through a pointer or reference (an MTLTensor where the kernel
      // declares a buffer: garbage on a GPU).
      for (const BoundRegion& b : launch.buffers) {
        if (result.ok && b.is_tensor && !b.taken_as_tensor) {
          result = binding_error("buffer(" + std::to_string(b.index) + ") '" + b.name +
                                 "' is bound to a tensor (an MTLTensor set by resource id), but " + kernel.name +
                                 " declares a pointer or reference there");
        }
      }
    }
  }
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BoundRegion& r = launch.buffers[i];
    if (!buffers[i].data.empty()) std::memcpy(buffers[i].data.data(), r.region->data(), buffers[i].data.size());
  }
  return result;
}

}  // namespace mtoh
