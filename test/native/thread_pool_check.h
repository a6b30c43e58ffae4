// The cpu backend's thread pool, checked on every build of the kernel check (native, arm64 under
// qemu, win64 under wine): prints one "ok ..." or "FAIL ..." line per property, returns failures.
#pragma once

int check_thread_pool();
