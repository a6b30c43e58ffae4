#include "backend.h"

#include <new>
#include <stdexcept>

#include "error.h"

namespace mto {

void Backend::post(std::function<void()> task) {
  (void)task;
  throw Error(code::Backend, "this backend has no threads of its own to run a task on");
}

OpStatus capture_status(const std::function<void()>& fn) {
  OpStatus s;
  try {
    fn();
  } catch (const Error& e) {
    s.code = e.code();
    s.message = e.what();
  } catch (const std::bad_alloc&) {
    s.code = code::OOM;
    s.message = "out of memory while running the op";
  } catch (const std::exception& e) {
    s.code = code::Backend;
    s.message = e.what();
  }
  return s;
}

std::string build_platform() {
#if defined(__APPLE__)
  const char* os = "darwin";
#elif defined(_WIN32)
  const char* os = "win32";
#elif defined(__linux__)
  const char* os = "linux";
#else
  const char* os = "unknown";
#endif
#if defined(__aarch64__) || defined(_M_ARM64)
  const char* arch = "arm64";
#elif defined(__x86_64__) || defined(_M_X64)
  const char* arch = "x64";
#else
  const char* arch = "unknown";
#endif
  return std::string(os) + "-" + arch;
}

}  // namespace mto
