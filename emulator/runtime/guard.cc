// Guard-paged regions and the fault trap (see guard.h).
#include "guard.h"

#include <signal.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdlib>
#include <mutex>
#include <new>

namespace mtoh {
namespace {

size_t page_size() {
  static const size_t p = size_t(sysconf(_SC_PAGESIZE));
  return p;
}

thread_local FaultTrap* tls_trap = nullptr;

void on_fault(int sig, siginfo_t* info, void* uctx) {
  FaultTrap* trap = tls_trap;
  if (!trap) {  // not ours: let the default action kill the process with the right signal
    signal(sig, SIG_DFL);
    return;
  }
  tls_trap = nullptr;
  trap->address = info->si_addr;
  trap->signal = sig;
  trap->write = false;
#if defined(__x86_64__) && defined(__linux__)
  if (sig == SIGSEGV) {
    const auto* uc = static_cast<const ucontext_t*>(uctx);
    trap->write = (uc->uc_mcontext.gregs[REG_ERR] & 2) != 0;
  }
#else
  (void)uctx;
#endif
  siglongjmp(trap->jump, 1);
}

}  // namespace

GuardedRegion::GuardedRegion(size_t bytes, bool align_end) : bytes_(bytes) {
  const size_t page = page_size();
  const size_t body = (bytes + page - 1) / page * page;
  map_bytes_ = body + 2 * page;
  void* p = mmap(nullptr, map_bytes_, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  map_ = static_cast<unsigned char*>(p);
  if (body) mprotect(map_ + page, body, PROT_READ | PROT_WRITE);
  data_ = align_end ? map_ + page + body - bytes : map_ + page;
}

GuardedRegion::~GuardedRegion() { munmap(map_, map_bytes_); }

bool GuardedRegion::owns(const void* addr, long* offset) const {
  const auto* a = static_cast<const unsigned char*>(addr);
  if (a < map_ || a >= map_ + map_bytes_) return false;
  *offset = long(a - data_);
  return true;
}

void prepare_fault_handling() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa = {};
    sa.sa_sigaction = on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGSEGV, &sa, nullptr);
    sigaction(SIGBUS, &sa, nullptr);
    sigaction(SIGFPE, &sa, nullptr);
  });
  thread_local bool has_altstack = false;
  if (!has_altstack) {
    stack_t ss = {};
    ss.ss_size = 1 << 16;
    ss.ss_sp = std::malloc(ss.ss_size);  // lives as long as the thread; freed with the process
    ss.ss_flags = 0;
    sigaltstack(&ss, nullptr);
    has_altstack = true;
  }
}

void arm_fault_trap(FaultTrap* trap) { tls_trap = trap; }

std::string fault_access(const FaultTrap& trap) {
  if (trap.signal != SIGSEGV) return "access";
#if defined(__x86_64__) && defined(__linux__)
  return trap.write ? "write" : "read";
#else
  return "access";
#endif
}

}  // namespace mtoh
