// The thread pool's checks alone (thread_pool_check.cc), for the ThreadSanitizer build (build.mjs
// target tsan): the kernels' checks would only be slower under it, and the pool is where the
// threads meet.
#include <cstdio>

#include "thread_pool_check.h"

int main() {
  const int failures = check_thread_pool();
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
