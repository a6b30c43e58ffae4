// Errors raised by core and backends. The addon turns them into JS errors whose `code` is the
// stable code below; lib/ wraps those into TensorOpsError.
#pragma once
#include <stdexcept>
#include <string>

namespace mto {

// Stable error codes (docs/design/API.md "Errors"). Never rename one: users switch on them.
namespace code {
inline constexpr const char* Shape = "E_SHAPE";
inline constexpr const char* DType = "E_DTYPE";
inline constexpr const char* Format = "E_FORMAT";
inline constexpr const char* Disposed = "E_DISPOSED";
inline constexpr const char* Backend = "E_BACKEND";
inline constexpr const char* OOM = "E_OOM";
inline constexpr const char* Arg = "E_ARG";
// A user kernel (dev.kernel()) that does not compile or fails while it runs.
inline constexpr const char* Kernel = "E_KERNEL";
}  // namespace code

class Error : public std::runtime_error {
 public:
  Error(const char* code, const std::string& message) : std::runtime_error(message), code_(code) {}
  const char* code() const noexcept { return code_; }

 private:
  const char* code_;
};

}  // namespace mto
