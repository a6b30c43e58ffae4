// Running a kernel the way a Metal compute encoder would: the kernel registry filled by the
// generated translation units (gen_kernels.mjs), the binding of [[buffer(n)]] / [[threadgroup(n)]]
// / thread-position arguments, and run_kernel, which checks the geometry and bindings and runs
// every threadgroup as fibers.
//
// Included by the generated kernel translation units before <metal_stdlib>, so only plain C++.
#pragma once
// Kernel translation units are compiled as C++14 (MSL 3's base); this header uses C++17 inside.
#pragma clang system_header
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "bridge.h"

namespace mtoh {

// The MSL thread-position argument attributes the harness binds.
enum class Attr {
  thread_position_in_grid,
  thread_position_in_threadgroup,
  threadgroup_position_in_grid,
  threads_per_threadgroup,
  threadgroups_per_grid,
  threads_per_grid,
  thread_index_in_threadgroup,
  simdgroup_index_in_threadgroup,
  thread_index_in_simdgroup,
  simdgroups_per_threadgroup,
  threads_per_simdgroup,
};

struct Binding;  // what one buffer/threadgroup index is bound to in the running launch

// [[buffer(n)]] argument: converts to whatever pointer or reference type the kernel declares
// (`device const float*`, `constant Params&`), address space included.
struct BufferArg {
  void* data;
  size_t bytes;
  int index;
  template <class T>
  operator T*() const {
    check_alignment(alignof(T));
    return (T*)data;  // C-style: the only cast clang allows into another address space
  }
  template <class T>
  operator T&() const {
    check_size(sizeof(T));
    check_alignment(alignof(T));
    return *(T*)data;
  }
  void check_alignment(size_t align) const;
  void check_size(size_t bytes_needed) const;
};

// A thread-position argument: converts to the scalar or vector type the kernel declares
// (uint, ushort, uint2, uint3, ...). A scalar gets the x component, as in MSL.
struct AttrArg {
  uint32_t v[3];
  template <class T>
  operator T() const {
    if constexpr (__is_scalar(T) && !__is_pointer(T)) {
      return T(v[0]);
    } else {
      T r;
      for (int i = 0; i < int(sizeof(T) / sizeof(r[0])) && i < 3; ++i) r[i] = v[i];
      return r;
    }
  }
};

// What the generated wrapper of one kernel instance sees for one GPU thread.
class ThreadArgs {
 public:
  BufferArg buffer(int index) const;
  BufferArg threadgroup_memory(int index) const;  // [[threadgroup(n)]]
  AttrArg attr(Attr a) const;
};

using KernelEntry = void (*)(const ThreadArgs&);

struct KernelInfo {
  std::string library;  // shader file stem: "qlinear" for shaders/qlinear.metal
  std::string variant;  // "" for the real kernels; a planted-fault name otherwise
  std::string name;     // the [[host_name]] of the instance
  KernelEntry entry = nullptr;
  std::vector<int> buffers;              // every [[buffer(n)]] index the kernel declares
  std::vector<int> threadgroup_buffers;  // every [[threadgroup(n)]] index
  uint32_t max_total_threads = 1024;     // [[max_total_threads_per_threadgroup(n)]]
};

// Called by static registrars in the generated translation units.
void register_kernel(KernelInfo info);

// A static object per kernel instance (MTOH_KERNEL_INSTANCE in the shim); K is the generated
// binder with entry(), buffers(), threadgroup_buffers() and max_total_threads().
template <class K>
struct KernelRegistrar {
  KernelRegistrar(const char* library, const char* variant, const char* name) {
    register_kernel(KernelInfo{library, variant, name, &K::entry, K::buffers(), K::threadgroup_buffers(),
                               K::max_total_threads()});
  }
};
// The kernel `name` of `library` in `variant`; a variant with no kernels of `library` at all (it
// was built for another library) gives the library's real kernel.
const KernelInfo* find_kernel(const std::string& library, const std::string& variant, const std::string& name);
// The libraries whose kernels the calling thread looked up since the last call (the driver
// reports them per case; test/msl/mutants.mjs runs only the cases of a mutated library).
std::vector<std::string> take_libraries_used();
std::vector<const KernelInfo*> all_kernels();

// ---- Running a launch.

struct HostBuffer {
  int index = 0;
  std::string name;                 // for messages: "x", "codes", "params", ...
  std::vector<unsigned char> data;  // copied in before the launch and back after it
};

struct Geometry {
  uint32_t threadgroups[3] = {1, 1, 1};  // dispatchThreadgroups: threadgroups per grid
  uint32_t threads[3] = {1, 1, 1};       // threads per threadgroup
};

struct RunOptions {
  bool align_end = true;       // guarded regions abut their upper (true) or lower guard page
  bool reverse_order = false;  // run fibers from the last thread to the first
  // The reverse pass lays cooperative tensors out in row blocks (::mtoh::coop_row_blocks); false
  // keeps it on the scattered layout (the user-kernel program compares seeded layouts itself).
  bool row_blocks_in_reverse = true;
  unsigned char threadgroup_poison = 0xFF;  // fill of fresh threadgroup memory (0xFF: NaN floats)
};

struct RunResult {
  bool ok = true;
  std::string kind;     // "", "out_of_bounds", "divergent_barrier", "barrier_after_return", ...
  std::string message;  // names the thread, the site, the buffer and offset where known
};

// Runs `kernel` over the grid with `buffers` bound by index and dynamic threadgroup memory
// `threadgroup_memory` ((index, bytes) pairs). Every index the kernel declares must be bound
// exactly once and nothing else; violations are reported as kind "binding".
RunResult run_kernel(const KernelInfo& kernel, const Geometry& geometry,
                     std::vector<HostBuffer>& buffers,
                     const std::vector<std::pair<int, uint32_t>>& threadgroup_memory,
                     const RunOptions& options);

}  // namespace mtoh
