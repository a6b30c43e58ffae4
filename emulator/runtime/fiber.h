// Fibers: the GPU threads of one threadgroup run as cooperatively scheduled user-space contexts
// on one OS thread, each on its own small stack with a guard page below it.
//
// On x86-64 ELF the switch is a few instructions (callee-saved registers and the stack pointer);
// glibc's swapcontext also saves the signal mask with a system call per switch, which made it
// about 40x slower here and the harness is switch-bound. Elsewhere ucontext is the fallback.
#pragma once
#include <cstddef>

#if defined(__x86_64__) && defined(__ELF__)
#define MTOH_FAST_CONTEXT 1
#else
#define MTOH_FAST_CONTEXT 0
#include <ucontext.h>
#endif

namespace mtoh {

struct Context {
#if MTOH_FAST_CONTEXT
  void* sp = nullptr;
#else
  ucontext_t uc;
#endif
};

// Saves the running context into `from` and resumes `to`.
void context_switch(Context* from, Context* to);

class FiberStack {
 public:
  explicit FiberStack(size_t bytes);
  ~FiberStack();
  FiberStack(const FiberStack&) = delete;
  FiberStack& operator=(const FiberStack&) = delete;

  // Prepares `ctx` so that switching to it runs entry() from the top of this stack. entry must
  // never return (it switches away for the last time instead).
  void start(Context* ctx, void (*entry)());

  // The PROT_NONE page below the stack: a fault there is a stack overflow.
  const char* guard_begin() const { return base_; }
  const char* guard_end() const { return base_ + guard_; }

 private:
  char* base_;   // mapping start (guard page)
  size_t size_;  // whole mapping
  size_t guard_;
};

}  // namespace mtoh
