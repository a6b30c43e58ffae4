// Fiber stacks and context switching (see fiber.h).
#include "fiber.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <new>

namespace mtoh {

#if MTOH_FAST_CONTEXT
// mtoh_context_switch(void** save_sp, void* load_sp): pushes the System V callee-saved registers,
// stores the stack pointer, loads the other one and pops its registers; `ret` then resumes it.
extern "C" void mtoh_context_switch(void** save_sp, void* load_sp);
__asm__(
    ".text\n"
    ".globl mtoh_context_switch\n"
    ".type mtoh_context_switch,@function\n"
    "mtoh_context_switch:\n"
    "  pushq %rbp\n"
    "  pushq %rbx\n"
    "  pushq %r12\n"
    "  pushq %r13\n"
    "  pushq %r14\n"
    "  pushq %r15\n"
    "  movq %rsp, (%rdi)\n"
    "  movq %rsi, %rsp\n"
    "  popq %r15\n"
    "  popq %r14\n"
    "  popq %r13\n"
    "  popq %r12\n"
    "  popq %rbx\n"
    "  popq %rbp\n"
    "  ret\n"
    ".size mtoh_context_switch,.-mtoh_context_switch\n"
    ".section .note.GNU-stack,\"\",@progbits\n"
    ".text\n");

void context_switch(Context* from, Context* to) { mtoh_context_switch(&from->sp, to->sp); }
#else
void context_switch(Context* from, Context* to) { swapcontext(&from->uc, &to->uc); }
#endif

FiberStack::FiberStack(size_t bytes) {
  guard_ = size_t(sysconf(_SC_PAGESIZE));
  size_ = guard_ + (bytes + guard_ - 1) / guard_ * guard_;
  void* p = mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  base_ = static_cast<char*>(p);
  mprotect(base_, guard_, PROT_NONE);
}

FiberStack::~FiberStack() { munmap(base_, size_); }

void FiberStack::start(Context* ctx, void (*entry)()) {
#if MTOH_FAST_CONTEXT
  // Frame popped by the first switch into the fiber: six zeroed registers, then `ret` to entry.
  // entry starts as if called: (rsp + 8) 16-byte aligned, with a null return address above.
  auto* top = reinterpret_cast<uint64_t*>((reinterpret_cast<uintptr_t>(base_ + size_)) & ~uintptr_t(15));
  uint64_t* sp = top;
  *--sp = 0;                                    // entry's return address: it never returns
  *--sp = reinterpret_cast<uint64_t>(entry);    // popped by `ret`
  for (int i = 0; i < 6; ++i) *--sp = 0;        // rbp rbx r12 r13 r14 r15
  ctx->sp = sp;
#else
  getcontext(&ctx->uc);
  ctx->uc.uc_stack.ss_sp = base_ + guard_;
  ctx->uc.uc_stack.ss_size = size_ - guard_;
  ctx->uc.uc_link = nullptr;
  makecontext(&ctx->uc, entry, 0);
#endif
}

}  // namespace mtoh
