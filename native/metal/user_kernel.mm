// Users' kernels on the metal backend (user_kernel.h): compiling them, and encoding a run into
// the stream's batch through the same encoder as every op (batch_encoder.h). A tensorops-mx
// kernel's scale-plane input (`mto_scaled_tensor<F> NAME [[buffer(n)]]`, lib/kernels/
// scale-plane-inputs.ts) is bound as linear.mm binds the qlinear_tensorops_mx weight: the MTLTensor
// with an E8M0 scale plane that qtensor.mm attached to the QuantizedTensor when it was made, set
// through the Metal 4 argument table (BatchEncoder::set_tensor: its gpuResourceID).
#include "user_kernel.h"

#import <Foundation/Foundation.h>

#include <cstring>

#include "buffers.h"
#include "core/error.h"
#include "core/scale_plane.h"
#include "encode.h"
#include "library.h"
#include "objc_strings.h"
#include "ops.h"
#include "qtensor.h"

namespace mto::metal {
namespace {

uint32_t clamp_u32(NSUInteger n) { return n > NSUInteger(UINT32_MAX) ? UINT32_MAX : uint32_t(n); }

// The scale-plane MTLTensor attached to q (qtensor.h) when its descriptor is the one the layout
// rule gives q (core/scale_plane.h: what lib/ checked at the call, and what the kernel's
// mto_scaled_tensor<F> declares: rank 2, F's data type, an E8M0 plane of blocks (32, 1)); nil
// when q has none (an SDK or macOS without multi-plane tensors, a descriptor Metal refused).
id scaled_tensor_of(const QTensor& q) {
  const ScalePlaneLayout l = scale_plane_layout(q.format, q.block, q.shape, Tier::TensorOpsMx);
  if (!l.ok) return nil;
  return scale_plane_tensor_for(q, plan::tensor_slot_of(l, 0));
}

}  // namespace

UserKernels::UserKernels(id<MTLDevice> device) : device_(device), state_(std::make_shared<State>()) {}

// `version` is the tier's (msl_version_for): 3.1 for simdgroup kernels, the version our own
// simdgroup kernels compile at (bfloat needs it) and the newest the deployment target (macOS 14)
// has, so such a kernel compiles on every Mac; 4.0 for tensorops, where the TensorOps headers exist.
// The cache is keyed by the source alone: the tier's includes make the texts of two tiers differ.
void UserKernels::compile(const std::string& name, const std::string& source, MslVersion version, UserKernelCompiled done) {
  {
    std::lock_guard<std::mutex> lock(state_->mu);
    auto it = state_->programs.find(source);
    if (it != state_->programs.end()) {
      UserKernelProgramPtr p = it->second;
      done(std::move(p), OpStatus{});
      return;
    }
  }
  // The handlers run on a thread of Metal's, maybe after this call and the backend are gone: the
  // blocks capture copies (a block would capture the reference parameters as references).
  std::shared_ptr<State> state = state_;
  id<MTLDevice> device = device_;
  const std::string kernel = name, text = source;
  const UserKernelCompiled finish = std::move(done);
  const bool cooperative = version.major >= 4;  // the TensorOps tiers: cooperative tensors
  @autoreleasepool {
    [device newLibraryWithSource:to_ns(text)
                         options:compile_options(version)
               completionHandler:^(id<MTLLibrary> library, NSError* error) {
                 if (!library) {
                   // The compiler's whole log: with the #line directives its positions are
                   // NAME.metal:LINE:COL (the body) and NAME.header.metal:LINE:COL.
                   finish(nullptr, OpStatus{code::Kernel, "kernel '" + kernel + "' does not compile:\n" +
                                                            error_text(error, "newLibraryWithSource: gave no library and no message")});
                   return;
                 }
                 id<MTLFunction> function = [library newFunctionWithName:to_ns(kernel)];
                 if (!function) {
                   finish(nullptr, OpStatus{code::Kernel, "kernel '" + kernel + "' compiled, but its library has no function of that name"});
                   return;
                 }
                 if (cooperative) {
                   // Pipelines per threadgroup size, at the first run of each (user_kernel below);
                   // lib/ checks a run against the device's limit, the pipeline again when made.
                   auto program = std::make_shared<MetalUserProgram>();
                   program->function = function;
                   program->max_threads = clamp_u32(device.maxThreadsPerThreadgroup.width);
                   program->simd_width = 32;  // every Apple GPU's SIMD width
                   {
                     std::lock_guard<std::mutex> lock(state->mu);
                     state->programs.emplace(text, program);
                   }
                   finish(std::move(program), OpStatus{});
                   return;
                 }
                 [device newComputePipelineStateWithFunction:function
                                           completionHandler:^(id<MTLComputePipelineState> pipeline, NSError* perror) {
                   if (!pipeline) {
                     finish(nullptr, OpStatus{code::Kernel, "kernel '" + kernel + "' compiled, but Metal made no pipeline of it: " +
                                                              error_text(perror, "no message")});
                     return;
                   }
                   auto program = std::make_shared<MetalUserProgram>();
                   program->pipeline = pipeline;
                   program->max_threads = clamp_u32(pipeline.maxTotalThreadsPerThreadgroup);
                   program->simd_width = clamp_u32(pipeline.threadExecutionWidth);
                   {
                     std::lock_guard<std::mutex> lock(state->mu);
                     state->programs.emplace(text, program);
                   }
                   finish(std::move(program), OpStatus{});
                 }];
               }];
  }
}

bool CommandStream::submit_user(id<MTLComputePipelineState> pipeline, const UserKernelLaunch& launch, Completion done) {
  // Everything that can fail is checked before anything is encoded into the shared batch.
  std::vector<id<MTLBuffer>> buffers(launch.args.size(), nil);
  std::vector<id> tensors(launch.args.size(), nil);
  // The buffers under each scale-plane tensor (its codes and scales), for the barriers below.
  std::vector<id<MTLBuffer>> tensor_buffers;
  for (size_t i = 0; i < launch.args.size(); ++i) {
    const UserKernelArg& a = launch.args[i];
    if (a.scaled) {
      id<MTLBuffer> codes = mtl_buffer(a.scaled->codes.get()), scales = mtl_buffer(a.scaled->scales.get());
      if (!codes || !scales) return false;
      tensors[i] = scaled_tensor_of(*a.scaled);
      if (tensors[i] == nil || !encoder_->binds_tensors()) {
        // Nothing encoded: the run fails with a message, as a kernel's own failure would.
        done(OpStatus{code::Kernel, "scale-plane input '" + a.name + "' at [[buffer(" + std::to_string(a.index) + ")]] " +
                                        (tensors[i] == nil ? "has no MTLTensor with a scale plane on this Mac (multi-plane tensors need macOS 27 "
                                                             "and an SDK that declares them)"
                                                           : "needs the Metal 4 command path, which binds tensors")});
        return true;
      }
      tensor_buffers.push_back(codes);
      tensor_buffers.push_back(scales);
      continue;
    }
    if (!a.buffer) continue;
    buffers[i] = mtl_buffer(a.buffer.get());
    if (!buffers[i]) return false;
  }
  for (const UserKernelArg& a : launch.args) {
    if (a.fill.empty() || !a.buffer) continue;
    uint8_t* p = static_cast<uint8_t*>(a.buffer->data());
    const size_t n = a.fill.size(), bytes = a.buffer->bytes();
    for (size_t at = 0; at + n <= bytes; at += n) std::memcpy(p + at, a.fill.data(), n);
  }
  @autoreleasepool {
    encoder_->begin();  // throws, having encoded nothing, when Metal gives no command buffer
    encoder_->set_pipeline(pipeline);
    // A user kernel's buffers have no declared roles: each counts as written, whole (a barrier
    // before it wherever an earlier dispatch since the last barrier touched one of them).
    std::vector<BufferRange> writes;
    for (id<MTLBuffer> b : buffers) {
      if (b) writes.push_back(BufferRange{(__bridge const void*)b, 0, kWholeBuffer});
    }
    for (id<MTLBuffer> b : tensor_buffers) writes.push_back(BufferRange{(__bridge const void*)b, 0, kWholeBuffer});
    order_dispatch({}, writes);
    for (size_t i = 0; i < launch.args.size(); ++i) {
      const UserKernelArg& a = launch.args[i];
      if (tensors[i] != nil) {
        encoder_->set_tensor(tensors[i], a.index);  // binds_tensors() was checked above
        budget_.bind(size_t(a.scaled->codes->bytes() + a.scaled->scales->bytes()));
      } else if (buffers[i]) {
        encoder_->set_buffer(buffers[i], a.index);
        budget_.bind(size_t(buffers[i].length));
      } else {
        encoder_->set_bytes(a.bytes.data(), a.bytes.size(), a.index);
      }
    }
    for (const UserKernelThreadgroupMemory& m : launch.threadgroup_memory) encoder_->set_threadgroup_memory(m.bytes, m.index);
    encoder_->dispatch(MTLSizeMake(launch.threadgroups[0], launch.threadgroups[1], launch.threadgroups[2]),
                       MTLSizeMake(launch.threads[0], launch.threads[1], launch.threads[2]));
    encoder_->on_completed(std::move(done));
  }
  if (budget_.op_encoded()) flush();
  return true;
}

namespace {

// The pipeline of a TensorOps user kernel for `threads` per threadgroup, made now (on a stream
// thread: EncodeNeedsPreparation) with requiredThreadsPerThreadgroup; throws E_KERNEL when Metal
// makes none or it allows fewer threads.
void make_sized_pipeline(std::shared_ptr<const MetalUserProgram> program, std::array<uint32_t, 3> threads) {
  std::string failure;
  @autoreleasepool {
    MTLComputePipelineDescriptor* descriptor = [MTLComputePipelineDescriptor new];
    descriptor.computeFunction = program->function;
    if (@available(macOS 26.0, *)) {
      descriptor.requiredThreadsPerThreadgroup = MTLSizeMake(threads[0], threads[1], threads[2]);
    }
    NSError* err = nil;
    id<MTLComputePipelineState> pipeline = [program->function.device newComputePipelineStateWithDescriptor:descriptor
                                                                                                   options:MTLPipelineOptionNone
                                                                                                reflection:nil
                                                                                                     error:&err];
    const uint64_t n = uint64_t(threads[0]) * threads[1] * threads[2];
    if (!pipeline) {
      failure = "kernel '" + std::string(program->function.name.UTF8String) + "' compiled, but Metal made no pipeline of it: " +
                error_text(err, "no message");
    } else if (n > pipeline.maxTotalThreadsPerThreadgroup) {
      failure = "kernel '" + std::string(program->function.name.UTF8String) + "' allows " +
                std::to_string(pipeline.maxTotalThreadsPerThreadgroup) + " threads per threadgroup on this GPU, the run asks for " +
                std::to_string(n);
    } else {
      std::lock_guard<std::mutex> lock(program->mu);
      program->sized.emplace(threads, pipeline);
    }
  }
  if (!failure.empty()) throw Error(code::Kernel, failure);  // after the autorelease pool is popped
}

}  // namespace

bool user_kernel(MetalContext& ctx, const UserKernelLaunch& launch, Completion done) {
  auto program = std::dynamic_pointer_cast<const MetalUserProgram>(launch.program);
  if (!program) return false;
  if (program->pipeline) return ctx.stream.submit_user(program->pipeline, launch, std::move(done));
  if (!program->function) return false;
  const std::array<uint32_t, 3> threads = {launch.threads[0], launch.threads[1], launch.threads[2]};
  id<MTLComputePipelineState> pipeline = nil;
  {
    std::lock_guard<std::mutex> lock(program->mu);
    auto it = program->sized.find(threads);
    if (it != program->sized.end()) pipeline = it->second;
  }
  if (!pipeline) throw EncodeNeedsPreparation{[program, threads] { make_sized_pipeline(program, threads); }};
  return ctx.stream.submit_user(pipeline, launch, std::move(done));
}

}  // namespace mto::metal
