// Declarations of the CoreFoundation subset native/metal/*.mm uses (device.mm reads the GPU's
// core count from the IORegistry as a CFNumber), for `npm run check:metal` on Linux
// (test/metal-sdk/README.md). Written from Apple's CoreFoundation documentation and the public
// headers' signatures (CFBase.h, CFNumber.h, CFString.h); not Apple's headers. All of it is older
// than any macOS we build for (10.0), so nothing here carries an availability.
#pragma once
#include <stdint.h>

#ifdef __cplusplus
#define MTO_CF_EXTERN_C_BEGIN extern "C" {
#define MTO_CF_EXTERN_C_END }
#else
#define MTO_CF_EXTERN_C_BEGIN
#define MTO_CF_EXTERN_C_END
#endif

// What a CF function returns +1 (the caller releases it) or takes over from the caller.
#define CF_RETURNS_RETAINED __attribute__((cf_returns_retained))
#define CF_RELEASES_ARGUMENT __attribute__((cf_consumed))
// A fixed-type enum, as CF_ENUM is in C++.
#define CF_ENUM(_type, _name) enum _name : _type

// MacTypes.h / CFBase.h (64-bit)
typedef unsigned char Boolean;
typedef signed long CFIndex;
typedef unsigned long CFTypeID;

typedef const void *CFTypeRef;
typedef const struct __CFString *CFStringRef;
typedef const struct __CFAllocator *CFAllocatorRef;
typedef const struct __CFDictionary *CFDictionaryRef;
typedef struct __CFDictionary *CFMutableDictionaryRef;
typedef const struct __CFNumber *CFNumberRef;

// CFString.h: a constant CFString from a literal, the compiler's builtin as Apple's CFSTR uses it.
#define CFSTR(cStr) ((CFStringRef)__builtin___CFStringMakeConstantString("" cStr ""))

// CFNumber.h: the C type a CFNumberGetValue asks for.
CF_ENUM(CFIndex, CFNumberType) {
  kCFNumberSInt32Type = 3,
  kCFNumberSInt64Type = 4,
  kCFNumberIntType = 9,
};

MTO_CF_EXTERN_C_BEGIN
extern const CFAllocatorRef kCFAllocatorDefault;
CFTypeID CFGetTypeID(CFTypeRef cf);
void CFRelease(CFTypeRef cf);
CFTypeID CFNumberGetTypeID(void);
// False when the conversion to `theType` is lossy or out of range (a best attempt is still written).
Boolean CFNumberGetValue(CFNumberRef number, CFNumberType theType, void *valuePtr);
MTO_CF_EXTERN_C_END
