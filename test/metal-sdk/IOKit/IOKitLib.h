// Declarations of the IOKit subset native/metal/*.mm uses (device.mm reads the AGXAccelerator
// service's gpu-core-count), for `npm run check:metal` on Linux (test/metal-sdk/README.md).
// Written from Apple's IOKitLib.h signatures as Apple publishes them (the IOKitUser sources and
// the macOS SDK's IOKit interface), not copied: the mach and IOKit handle types, the functions
// with their CF ownership, and the default main port under both its names, kIOMainPortDefault
// (macOS 12.0) and the kIOMasterPortDefault it replaced (deprecated in 12.0).
#pragma once
#include <stdint.h>

#include <CoreFoundation/CoreFoundation.h>

#ifndef MTO_SDK_MACOS
#define MTO_SDK_MACOS(v) __attribute__((availability(macos, introduced = v)))
#define MTO_SDK_MACOS_DEPRECATED(v, d) __attribute__((availability(macos, introduced = v, deprecated = d)))
#endif

// mach/port.h, mach/kern_return.h: a port name is a 32-bit natural_t.
typedef unsigned int mach_port_t;
typedef int kern_return_t;
#define MACH_PORT_NULL 0

// IOKit/IOTypes.h: every IOKit handle is a mach port name.
typedef mach_port_t io_object_t;
typedef io_object_t io_registry_entry_t;
typedef io_object_t io_service_t;
typedef io_object_t io_iterator_t;
typedef uint32_t IOOptionBits;
#define IO_OBJECT_NULL ((io_object_t)0)

MTO_CF_EXTERN_C_BEGIN
// The default main port (MACH_PORT_NULL), passed where a function asks for the main port.
extern const mach_port_t kIOMainPortDefault MTO_SDK_MACOS(12.0);
extern const mach_port_t kIOMasterPortDefault MTO_SDK_MACOS_DEPRECATED(10.0, 12.0);

kern_return_t IOObjectRelease(io_object_t object);
// A matching dictionary for the services of class `name` (a C string), +1.
CFMutableDictionaryRef IOServiceMatching(const char *name) CF_RETURNS_RETAINED;
// The first registered service matching `matching`, which it consumes; IO_OBJECT_NULL when none.
// The caller releases the service with IOObjectRelease.
io_service_t IOServiceGetMatchingService(mach_port_t mainPort, CFDictionaryRef matching CF_RELEASES_ARGUMENT);
// A snapshot of one property of an entry, +1 (CFRelease it); NULL when the entry has no such key.
CFTypeRef IORegistryEntryCreateCFProperty(io_registry_entry_t entry, CFStringRef key, CFAllocatorRef allocator,
                                          IOOptionBits options) CF_RETURNS_RETAINED;
MTO_CF_EXTERN_C_END
