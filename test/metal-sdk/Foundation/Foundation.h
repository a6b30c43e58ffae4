// Declarations of the Foundation subset native/metal/*.mm uses, for `npm run check:metal` on
// Linux (test/metal-sdk/README.md). Written from Apple's Foundation documentation and the public
// headers' signatures; each with the macOS version it was introduced in, so clang's
// -Wunguarded-availability treats our code as the real SDK would. Not Apple's headers.
#pragma once
#include <stddef.h>
#include <stdint.h>

// Availability.h: the newest macOS the SDK declares (260000 = 26.0). These declarations model the
// macOS 27 SDK, so code behind `#if __MAC_OS_X_VERSION_MAX_ALLOWED >= 270000` is checked too;
// a file that defines it lower first is checked as built with an older SDK.
#ifndef __MAC_OS_X_VERSION_MAX_ALLOWED
#define __MAC_OS_X_VERSION_MAX_ALLOWED 270000
#endif
#define API_AVAILABLE(...) MTO_SDK_AVAILABLE_##__VA_ARGS__
#define MTO_SDK_AVAILABLE_macos(v) MTO_SDK_MACOS(v)
#define MTO_SDK_MACOS(v) __attribute__((availability(macos, introduced = v)))
#define MTO_SDK_MACOS_DEPRECATED(v, d) __attribute__((availability(macos, introduced = v, deprecated = d)))
#define NS_RETURNS_RETAINED __attribute__((ns_returns_retained))
#define NS_RETURNS_INNER_POINTER __attribute__((objc_returns_inner_pointer))
// A fixed-type enum, as NS_ENUM is in Objective-C++: passing a plain integer needs a cast.
#define NS_ENUM(_type, _name) enum _name : _type
// An option set, as NS_OPTIONS is in Objective-C++: a typedef of the integer type (so OR-ed
// options need no cast) and an unnamed enum of that type for the constants.
#define NS_OPTIONS(_type, _name) typedef _type _name; enum : _type
#define NS_ASSUME_NONNULL_BEGIN _Pragma("clang assume_nonnull begin")
#define NS_ASSUME_NONNULL_END _Pragma("clang assume_nonnull end")

// objc.h: on arm64 BOOL is bool (OBJC_BOOL_IS_BOOL).
typedef bool BOOL;
#define YES __objc_yes
#define NO __objc_no
#define nil nullptr
typedef long NSInteger;
typedef unsigned long NSUInteger;

NS_ASSUME_NONNULL_BEGIN

@class NSString;
typedef struct _NSZone NSZone;

@protocol NSObject
- (BOOL)isEqual:(nullable id)object;
- (Class)class;
- (instancetype)self;
- (BOOL)respondsToSelector:(SEL)aSelector;
@property(readonly) NSUInteger hash;
@property(readonly, copy) NSString *description;
@end

@protocol NSCopying
- (id)copyWithZone:(nullable NSZone *)zone;
@end

__attribute__((objc_root_class))
@interface NSObject <NSObject>
+ (instancetype)alloc;
+ (instancetype)new;
- (instancetype)init;
+ (Class)class;
- (id)copy;
@end

// NSEnumerator.h: what `for (x in collection)` sends.
typedef struct {
  unsigned long state;
  id __unsafe_unretained _Nullable *_Nullable itemsPtr;
  unsigned long *_Nullable mutationsPtr;
  unsigned long extra[5];
} NSFastEnumerationState;

@protocol NSFastEnumeration
- (NSUInteger)countByEnumeratingWithState:(NSFastEnumerationState *)state
                                  objects:(id __unsafe_unretained _Nullable[_Nonnull])buffer
                                    count:(NSUInteger)len;
@end

// NSString.h
typedef NSUInteger NSStringEncoding;
enum : NSStringEncoding { NSASCIIStringEncoding = 1, NSUTF8StringEncoding = 4 };

@interface NSString : NSObject <NSCopying>
@property(readonly) NSUInteger length;
@property(nullable, readonly) const char *UTF8String NS_RETURNS_INNER_POINTER;
+ (nullable instancetype)stringWithUTF8String:(const char *)nullTerminatedCString;
- (nullable instancetype)initWithBytes:(const void *)bytes
                                length:(NSUInteger)len
                              encoding:(NSStringEncoding)encoding;
- (BOOL)containsString:(NSString *)str MTO_SDK_MACOS(10.10);
- (BOOL)isEqualToString:(NSString *)aString;
@end

// NSArray.h
@interface NSArray<__covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
- (ObjectType)objectAtIndex:(NSUInteger)index;
- (ObjectType)objectAtIndexedSubscript:(NSUInteger)idx MTO_SDK_MACOS(10.8);
@property(nullable, nonatomic, readonly) ObjectType firstObject MTO_SDK_MACOS(10.6);
// What an array literal @[a, b] sends.
+ (instancetype)arrayWithObjects:(const ObjectType _Nonnull[_Nonnull])objects count:(NSUInteger)cnt;
@end

// NSDictionary.h (MTLCompileOptions.preprocessorMacros)
@interface NSDictionary<__covariant KeyType, __covariant ObjectType> : NSObject <NSCopying, NSFastEnumeration>
@property(readonly) NSUInteger count;
- (nullable ObjectType)objectForKey:(KeyType)aKey;
@end

// NSError.h
typedef NSString *NSErrorDomain;
@interface NSError : NSObject <NSCopying>
@property(readonly, copy) NSErrorDomain domain;
@property(readonly) NSInteger code;
@property(readonly, copy) NSString *localizedDescription;
@end

// NSURL.h (MTLBinaryArchive reads and writes through file URLs)
@interface NSURL : NSObject <NSCopying>
+ (NSURL *)fileURLWithPath:(NSString *)path isDirectory:(BOOL)isDir MTO_SDK_MACOS(10.5);
@property(nullable, readonly, copy) NSString *path;
@end

// NSProcessInfo.h
typedef struct {
  NSInteger majorVersion;
  NSInteger minorVersion;
  NSInteger patchVersion;
} NSOperatingSystemVersion;

@interface NSProcessInfo : NSObject
@property(class, readonly, strong) NSProcessInfo *processInfo;
@property(readonly) NSOperatingSystemVersion operatingSystemVersion MTO_SDK_MACOS(10.10);
@property(readonly, copy) NSString *operatingSystemVersionString;
- (BOOL)isOperatingSystemAtLeastVersion:(NSOperatingSystemVersion)version MTO_SDK_MACOS(10.10);
@end

// NSObjCRuntime.h: a class by name, nil when the running system has none (device.mm asks for
// classes newer than the deployment target this way).
extern "C" Class _Nullable NSClassFromString(NSString *aClassName);

NS_ASSUME_NONNULL_END
