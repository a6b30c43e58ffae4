// NSString / NSError <-> std::string at the Objective-C++ boundary (native/metal/*.mm only).
#pragma once
#import <Foundation/Foundation.h>

#include <string>

namespace mto::metal {

inline std::string to_std(NSString* s) {
  const char* utf8 = s ? s.UTF8String : nullptr;
  return utf8 ? std::string(utf8) : std::string();
}

inline NSString* to_ns(const std::string& s) {
  return [[NSString alloc] initWithBytes:s.data() length:s.size() encoding:NSUTF8StringEncoding];
}

// The compiler's or Metal's message: localizedDescription carries the full compiler log for a
// failed newLibraryWithSource: (what MLX and llama.cpp print).
inline std::string error_text(NSError* e, const char* fallback) {
  return e ? to_std(e.localizedDescription) : std::string(fallback);
}

}  // namespace mto::metal
