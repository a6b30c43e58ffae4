// Plan encoding and completion (encode.h).
#include "encode.h"

#import <Foundation/Foundation.h>

#include <string>

#include "buffers.h"
#include "core/error.h"
#include "objc_strings.h"

namespace mto::metal {
namespace {

MTLSize size3(const uint32_t v[3]) { return MTLSizeMake(v[0], v[1], v[2]); }

// The status an errored command buffer reports to the op's Promise.
OpStatus gpu_failure(id<MTLCommandBuffer> buffer) {
  NSError* e = buffer.error;
  const std::string text = error_text(e, "the command buffer ended in an error state");
  if (e && [e.domain isEqualToString:MTLCommandBufferErrorDomain]) {
    if (e.code == NSInteger(MTLCommandBufferErrorOutOfMemory)) {
      return OpStatus{code::OOM, "the GPU ran out of memory running the op: " + text};
    }
    if (e.code == NSInteger(MTLCommandBufferErrorTimeout)) {
      return OpStatus{code::Backend, "the GPU took too long and the system stopped the op: " + text};
    }
  }
  return OpStatus{code::Backend, "the GPU failed running the op: " + text};
}

}  // namespace

bool ArgTable::bind(plan::Arg arg, const Buffer* buffer) {
  id<MTLBuffer> b = buffer ? mtl_buffer(buffer) : nil;
  if (!b) return false;
  table_[size_t(arg)] = b;
  return true;
}

CommandStream::CommandStream(id<MTLDevice> device, ShaderLibraries& libraries, CommitPolicy policy)
    : policy_(policy), queue_([device newCommandQueue]), libraries_(libraries) {
  if (!queue_) throw Error(code::Backend, "could not create a Metal command queue");
  queue_.label = @"metal-tensorops";
}

bool CommandStream::submit(const std::vector<plan::Dispatch>& passes, const ArgTable& args,
                           std::shared_ptr<void> hold, Completion done) {
  return submit(passes, std::vector<ArgTable>(passes.size(), args), std::move(hold), std::move(done));
}

bool CommandStream::submit(const std::vector<plan::Dispatch>& passes, const std::vector<ArgTable>& tables,
                           std::shared_ptr<void> hold, Completion done) {
  if (tables.size() != passes.size()) {
    throw Error(code::Backend, "internal: " + std::to_string(passes.size()) + " passes with " +
                                   std::to_string(tables.size()) + " argument tables");
  }
  // A pass over no threadgroups has nothing to do, and Metal refuses a zero-size grid. The plans
  // refuse empty work (the op then runs on the cpu backend, without a kernel); a pass that still
  // comes here empty is skipped rather than encoded.
  auto empty_grid = [](const plan::Dispatch& d) {
    return d.threadgroups[0] == 0 || d.threadgroups[1] == 0 || d.threadgroups[2] == 0 ||
           d.threads_per_threadgroup[0] == 0 || d.threads_per_threadgroup[1] == 0 || d.threads_per_threadgroup[2] == 0;
  };
  // Everything that can fail is checked before anything is encoded into the shared batch.
  std::vector<id<MTLComputePipelineState>> pipelines;
  std::vector<id<MTLBuffer>> spare;  // per pass: what an Unused slot is bound to
  for (size_t i = 0; i < passes.size(); ++i) {
    const plan::Dispatch& d = passes[i];
    const ArgTable& args = tables[i];
    if (empty_grid(d)) {
      pipelines.push_back(nil);
      spare.push_back(nil);
      continue;
    }
    id<MTLComputePipelineState> p = libraries_.pipeline(d.library, d.kernel, d.constants);
    const uint64_t threads = uint64_t(d.threads_per_threadgroup[0]) * d.threads_per_threadgroup[1] *
                             d.threads_per_threadgroup[2];
    // A pipeline that allows fewer threads on this GPU (a kernel that needs many registers): the
    // op declines before anything is encoded, and the cpu backend runs it.
    if (threads > p.maxTotalThreadsPerThreadgroup) return false;
    // An Unused slot still needs a valid buffer: the kernel declares it but never reads it.
    id<MTLBuffer> any = nil;
    for (const plan::BufferSlot& s : d.buffers) {
      if (s.arg == plan::Arg::Params || s.arg == plan::Arg::Unused) continue;
      if (!args.get(s.arg)) {
        throw Error(code::Backend, std::string("internal: kernel ") + d.kernel + " reads " +
                                       plan::arg_name(s.arg) + " at buffer(" + std::to_string(s.index) +
                                       ") but nothing is bound to it");
      }
      if (!any) any = args.get(s.arg);
    }
    pipelines.push_back(p);
    spare.push_back(any);
  }
  @autoreleasepool {
    if (!batch_) {
      batch_ = [queue_ commandBuffer];
      encoder_ = batch_ ? [batch_ computeCommandEncoder] : nil;
      if (!encoder_) {
        batch_ = nil;
        throw Error(code::Backend, "could not create a Metal command buffer or compute encoder");
      }
    }
    for (size_t i = 0; i < passes.size(); ++i) {
      const plan::Dispatch& d = passes[i];
      const ArgTable& args = tables[i];
      if (empty_grid(d)) continue;
      [encoder_ setComputePipelineState:pipelines[i]];
      for (const plan::BufferSlot& s : d.buffers) {
        if (s.arg == plan::Arg::Params) {
          [encoder_ setBytes:d.params.data() length:d.params.size() atIndex:s.index];
        } else {
          id<MTLBuffer> b = s.arg == plan::Arg::Unused ? spare[i] : args.get(s.arg);
          [encoder_ setBuffer:b offset:0 atIndex:s.index];
          bytes_in_batch_ += size_t(b.length);
        }
      }
      [encoder_ dispatchThreadgroups:size3(d.threadgroups) threadsPerThreadgroup:size3(d.threads_per_threadgroup)];
    }
    // The block copies the C++ objects it captures; `hold` is released with the block, after
    // `done` ran, so the op's buffers outlive the GPU's use of them.
    [batch_ addCompletedHandler:^(id<MTLCommandBuffer> buffer) {
      OpStatus status;
      if (buffer.status == MTLCommandBufferStatusError) status = gpu_failure(buffer);
      (void)hold;
      done(std::move(status));
    }];
  }
  if (++ops_in_batch_ >= policy_.max_ops || bytes_in_batch_ >= policy_.max_bytes) flush();
  return true;
}

uint32_t CommandStream::max_threads(const plan::Dispatch& d) {
  const NSUInteger n = libraries_.pipeline(d.library, d.kernel, d.constants).maxTotalThreadsPerThreadgroup;
  return n > NSUInteger(UINT32_MAX) ? UINT32_MAX : uint32_t(n);
}

Completion complete_with_status(BufferPtr status, std::function<OpStatus(const int32_t*)> read, Completion done) {
  return [status = std::move(status), read = std::move(read), done = std::move(done)](OpStatus s) {
    // Shared storage: the GPU's writes are visible here once the command buffer completed.
    if (s.ok()) s = read(static_cast<const int32_t*>(status->data()));
    done(std::move(s));
  };
}

void CommandStream::flush() {
  if (!batch_) return;
  [encoder_ endEncoding];
  [batch_ commit];
  batch_ = nil;
  encoder_ = nil;
  ops_in_batch_ = 0;
  bytes_in_batch_ = 0;
}

}  // namespace mto::metal
