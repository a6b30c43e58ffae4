// MSL compilation, the Metal 3 pipeline maker and the pipeline cache (library.h).
#include "library.h"

#import <Foundation/Foundation.h>

#include "core/error.h"
#include "metal_constants.h"
#include "objc_strings.h"
#include "pipeline_archive.h"

namespace mto::metal {
namespace {

// Whether MSL `v` exists on the running macOS `os` (device.h running_os_version: the real
// version, not `@available`'s answer, which follows the SDK the process was linked against).
bool language_version_usable(MslVersion v, const OsVersion& os, std::string* why) {
  int major = 0;  // the macOS that introduced v
  if (v.major > 4 || (v.major == 4 && v.minor >= 1)) {
    major = 27;
  } else if (v.major == 4) {
    major = 26;
  } else if (v.major == 3 && v.minor >= 2) {
    major = 15;
  } else {
    return true;  // up to 3.1: our deployment target (macOS 14) has it
  }
  if (os.at_least(major, 0)) return true;
  *why = "MSL " + std::to_string(v.major) + "." + std::to_string(v.minor) + " needs macOS " +
         std::to_string(major) + " or later (this is macOS " + os_version_string(os) + ")";
  return false;
}

// IEEE 754 arithmetic and precise math functions. The kernels need both: docs/design/API.md's NaN
// and infinity rules (NaN through attention and norms, softmax rows of -inf, silu(-inf) = -0) and
// attention's -0 marker for hidden keys rule out MTLMathModeFast (no NaN, no infinities) and
// MTLMathModeRelaxed (it keeps NaN and infinities but may drop the sign of zero and reassociate).
// mathMode and mathFloatingPointFunctions (whose default is Fast) replace fastMathEnabled, which
// macOS 15 deprecates; below macOS 15 only fastMathEnabled exists, and NO there means both.
void set_safe_math(MTLCompileOptions* options) {
  if (@available(macOS 15.0, *)) {
    options.mathMode = MTLMathModeSafe;
    options.mathFloatingPointFunctions = MTLMathFloatingPointFunctionsPrecise;
  } else {
    // Unreachable at a deployment target of macOS 15 or later, where the deprecation would
    // otherwise be an error (-Werror); check:metal compiles this file at macOS 14.0 and 27.0.
#pragma clang diagnostic push
#pragma clang diagnostic ignored "-Wdeprecated-declarations"
    options.fastMathEnabled = NO;
#pragma clang diagnostic pop
  }
}

MTLDataType data_type(ConstantType t) {
  switch (t) {
    case ConstantType::Bool: return MTLDataTypeBool;
    case ConstantType::Int16: return MTLDataTypeShort;
    case ConstantType::UInt16: return MTLDataTypeUShort;
    case ConstantType::Int32: return MTLDataTypeInt;
    case ConstantType::UInt32: return MTLDataTypeUInt;
    case ConstantType::Float32: return MTLDataTypeFloat;
  }
  return MTLDataTypeNone;
}

}  // namespace

MTLFunctionConstantValues* constant_values(const std::vector<FunctionConstant>& constants) {
  MTLFunctionConstantValues* values = [MTLFunctionConstantValues new];
  for (const FunctionConstant& c : constants) {
    // setConstantValue copies from a pointer to a value of the constant's own width.
    const bool b = c.bits != 0;
    const uint16_t h = uint16_t(c.bits);
    const void* p = c.type == ConstantType::Bool ? static_cast<const void*>(&b)
                    : (c.type == ConstantType::Int16 || c.type == ConstantType::UInt16)
                        ? static_cast<const void*>(&h)
                        : static_cast<const void*>(&c.bits);
    [values setConstantValue:p type:data_type(c.type) atIndex:c.index];
  }
  return values;
}

MTLCompileOptions* compile_options(MslVersion version) {
  MTLCompileOptions* options = [MTLCompileOptions new];
  options.languageVersion = language_version(version);
  set_safe_math(options);
  return options;
}

id<MTLLibrary> compile_library(id<MTLDevice> device, const std::string& source, MslVersion version,
                               const OsVersion& os, std::string* error) {
  if (!language_version_usable(version, os, error)) return nil;
  @autoreleasepool {
    MTLCompileOptions* options = compile_options(version);
    NSError* err = nil;
    id<MTLLibrary> library = [device newLibraryWithSource:to_ns(source) options:options error:&err];
    if (!library) *error = error_text(err, "newLibraryWithSource:options:error: returned nil");
    return library;
  }
}

Metal3PipelineMaker::Metal3PipelineMaker(id<MTLDevice> device, std::unique_ptr<PipelineArchive> archive)
    : device_(device), archive_(std::move(archive)) {}

Metal3PipelineMaker::~Metal3PipelineMaker() = default;

void Metal3PipelineMaker::flush() {
  if (archive_) archive_->flush();
}

id<MTLComputePipelineState> Metal3PipelineMaker::make(id<MTLLibrary> library, const std::string& key,
                                                      const std::string& kernel,
                                                      const std::vector<FunctionConstant>& constants,
                                                      MTLSize required, std::string* failure) {
  @autoreleasepool {
    NSError* err = nil;
    id<MTLFunction> function =
        constants.empty() ? [library newFunctionWithName:to_ns(kernel)]
                          : [library newFunctionWithName:to_ns(kernel)
                                          constantValues:constant_values(constants)
                                                   error:&err];
    if (!function) {
      *failure = "Metal kernel " + key + " is not in the library: " + error_text(err, "no function of that name");
      return nil;
    }
    MTLComputePipelineDescriptor* descriptor = [MTLComputePipelineDescriptor new];
    descriptor.computeFunction = function;
    descriptor.label = to_ns(key);
    // Only kernels with cooperative tensors ask for it, and they exist from macOS 26 only.
    if (required.width != 0) {
      if (@available(macOS 26.0, *)) descriptor.requiredThreadsPerThreadgroup = required;
    }
    id<MTLComputePipelineState> pipeline = nil;
    id<MTLBinaryArchive> archive = archive_ ? archive_->archive() : nil;
    if (archive) {
      // A hit skips the back-end compile and leaves the archive file alone; only a miss
      // compiles and writes the archive back.
      descriptor.binaryArchives = @[ archive ];
      NSError* miss = nil;
      pipeline = [device_ newComputePipelineStateWithDescriptor:descriptor
                                                        options:MTLPipelineOptionFailOnBinaryArchiveMiss
                                                     reflection:nil
                                                          error:&miss];
    }
    if (!pipeline) {
      pipeline = [device_ newComputePipelineStateWithDescriptor:descriptor
                                                        options:MTLPipelineOptionNone
                                                     reflection:nil
                                                          error:&err];
      if (pipeline && archive) archive_->add(descriptor);
    }
    if (!pipeline) {
      *failure = "could not create the Metal pipeline " + key + ": " +
                 error_text(err, "newComputePipelineStateWithDescriptor:options:reflection:error: returned nil");
    }
    return pipeline;
  }
}

PipelineCache::PipelineCache(id<MTLLibrary> library, PipelineMaker* maker) : library_(library), maker_(maker) {}

namespace {

// pipeline_key, and the required threadgroup size when there is one (a label names it too).
std::string cache_key(const std::string& kernel, const std::vector<FunctionConstant>& constants, MTLSize required) {
  std::string key = pipeline_key(kernel, constants);
  if (required.width != 0) {
    key += "@" + std::to_string(required.width) + "x" + std::to_string(required.height) + "x" +
           std::to_string(required.depth);
  }
  return key;
}

}  // namespace

id<MTLComputePipelineState> PipelineCache::get(const std::string& kernel,
                                               const std::vector<FunctionConstant>& constants, MTLSize required) {
  const std::string key = cache_key(kernel, constants, required);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipelines_.find(key);
  if (it != pipelines_.end()) return it->second;
  id<MTLComputePipelineState> pipeline = build(key, kernel, constants, required);
  pipelines_.emplace(key, pipeline);
  return pipeline;
}

id<MTLComputePipelineState> PipelineCache::find(const std::string& kernel,
                                                const std::vector<FunctionConstant>& constants,
                                                MTLSize required) const {
  const std::string key = cache_key(kernel, constants, required);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = pipelines_.find(key);
  return it == pipelines_.end() ? nil : it->second;
}

size_t PipelineCache::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return pipelines_.size();
}

id<MTLComputePipelineState> PipelineCache::build(const std::string& key, const std::string& kernel,
                                                 const std::vector<FunctionConstant>& constants,
                                                 MTLSize required) {
  std::string failure;
  id<MTLComputePipelineState> pipeline = maker_->make(library_, key, kernel, constants, required, &failure);
  // A pipeline with no threads per threadgroup cannot be dispatched (llama.cpp rejects these too).
  if (pipeline && pipeline.maxTotalThreadsPerThreadgroup == 0) {
    failure = "could not create the Metal pipeline " + key + ": maxTotalThreadsPerThreadgroup is 0";
    pipeline = nil;
  }
  if (!pipeline) throw Error(code::Backend, failure);  // after the maker's autorelease pool is popped
  return pipeline;
}

}  // namespace mto::metal
