// Out-of-bounds detection for kernel memory: every bound buffer and threadgroup array lives in its
// own mapping with PROT_NONE pages on both sides, so the first byte read or written outside it
// faults. A SIGSEGV handler (on an alternate stack, since the fault happens on a fiber's small
// stack) records the address and jumps back to the scheduler, which names the buffer and offset.
//
// Why guard pages and not a checked-pointer wrapper: kernels keep their real MSL pointer types
// (`device const float*`), pointer arithmetic and casts, so the checked code is exactly the code
// that runs on the GPU. The cost is granularity: memory is mapped in pages, so a region can abut a
// guard page at one end only. A launch therefore runs twice (launch.h): once with every region
// ending exactly at its upper guard page (catches overruns to the byte) and once starting exactly
// at its lower guard page (catches underruns to the byte).
#pragma once
#include <csetjmp>
#include <cstddef>
#include <string>

namespace mtoh {

class GuardedRegion {
 public:
  // `align_end`: the data ends at the upper guard page; else it starts at the lower one.
  GuardedRegion(size_t bytes, bool align_end);
  ~GuardedRegion();
  GuardedRegion(const GuardedRegion&) = delete;
  GuardedRegion& operator=(const GuardedRegion&) = delete;

  unsigned char* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  // True when `addr` lies in this region's mapping (guard pages and slack included); `offset` is
  // then addr - data() (negative before the start, >= bytes() past the end).
  bool owns(const void* addr, long* offset) const;

 private:
  unsigned char* map_;
  size_t map_bytes_;
  unsigned char* data_;
  size_t bytes_;
};

// A fault captured while kernel code ran on this OS thread.
struct FaultTrap {
  sigjmp_buf jump;
  const void* address = nullptr;
  int signal = 0;
  bool write = false;  // x86-64 page-fault error code bit 1; false where unknown
};

// Installs the SIGSEGV/SIGBUS/SIGFPE handlers once per process and an alternate signal stack once
// per OS thread. Call on every thread that runs kernels, before arming.
void prepare_fault_handling();
// While armed, a fault on this thread fills `trap` and siglongjmps to trap->jump; disarmed (null),
// a fault is fatal as usual.
void arm_fault_trap(FaultTrap* trap);

// "read"/"write"/"access" of a captured fault.
std::string fault_access(const FaultTrap& trap);

}  // namespace mtoh
