// Plan encoding and completion (encode.h).
#include "encode.h"

#import <Foundation/Foundation.h>

#include <string>

#include "buffers.h"
#include "core/error.h"

namespace mto::metal {
namespace {

MTLSize size3(const uint32_t v[3]) { return MTLSizeMake(v[0], v[1], v[2]); }

}  // namespace

bool ArgTable::bind(plan::Arg arg, const Buffer* buffer) {
  id<MTLBuffer> b = buffer ? mtl_buffer(buffer) : nil;
  if (!b) return false;
  table_[size_t(arg)] = b;
  return true;
}

BufferRange ArgTable::range(plan::Arg arg) const {
  const Span& s = ranges_[size_t(arg)];
  return BufferRange{(__bridge const void*)table_[size_t(arg)], s.offset, s.length};
}

CommandStream::CommandStream(std::unique_ptr<BatchEncoder> encoder, ShaderLibraries& libraries, CommitPolicy policy,
                             EncoderOrder order)
    : budget_(policy), encoder_(std::move(encoder)), libraries_(libraries), barriers_(order) {}

void CommandStream::order_dispatch(const std::vector<BufferRange>& reads, const std::vector<BufferRange>& writes) {
  if (barriers_.before_dispatch(reads, writes)) encoder_->barrier();
}

bool ArgTable::bind_tensor(plan::Arg arg, id tensor) {
  if (tensor == nil) return false;
  tensors_[size_t(arg)] = tensor;
  return true;
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
    id<MTLComputePipelineState> p = libraries_.pipeline(d.library, d.kernel, d.constants, d.threads_per_threadgroup);
    const uint64_t threads = uint64_t(d.threads_per_threadgroup[0]) * d.threads_per_threadgroup[1] *
                             d.threads_per_threadgroup[2];
    // A pipeline that allows fewer threads on this GPU (a kernel that needs many registers): the
    // op declines before anything is encoded, and the cpu backend runs it.
    if (threads > p.maxTotalThreadsPerThreadgroup) return false;
    // Tensor arguments: only a path with an argument table binds them (the plans that use them
    // are the tensorops-mx tier's, which runs on the Metal 4 path).
    if (!d.tensors.empty() && !encoder_->binds_tensors()) return false;
    for (const plan::TensorSlot& t : d.tensors) {
      if (!args.get_tensor(t.arg)) {
        throw Error(code::Backend, std::string("internal: kernel ") + d.kernel + " reads tensor " +
                                       plan::arg_name(t.arg) + " at buffer(" + std::to_string(t.index) +
                                       ") but no MTLTensor is bound to it");
      }
    }
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
    encoder_->begin();  // throws, having encoded nothing, when Metal gives no command buffer
    for (size_t i = 0; i < passes.size(); ++i) {
      const plan::Dispatch& d = passes[i];
      const ArgTable& args = tables[i];
      if (empty_grid(d)) continue;
      encoder_->set_pipeline(pipelines[i]);
      std::vector<BufferRange> reads, writes;
      for (const plan::BufferSlot& s : d.buffers) {
        const plan::Access access = plan::arg_access(s.arg);
        if (access == plan::Access::Read) reads.push_back(args.range(s.arg));
        if (access == plan::Access::Write) writes.push_back(args.range(s.arg));
      }
      // A tensor argument reads the planes it views (a write() into the weight before it must
      // land first).
      for (const plan::TensorSlot& t : d.tensors) {
        for (plan::Arg plane : {t.data, t.scales})
          if (args.get(plane)) reads.push_back(args.range(plane));
      }
      order_dispatch(reads, writes);
      for (const plan::BufferSlot& s : d.buffers) {
        if (s.arg == plan::Arg::Params) {
          encoder_->set_bytes(d.params.data(), d.params.size(), s.index);
        } else {
          id<MTLBuffer> b = s.arg == plan::Arg::Unused ? spare[i] : args.get(s.arg);
          encoder_->set_buffer(b, s.index);
          budget_.bind(size_t(b.length));
        }
      }
      for (const plan::TensorSlot& t : d.tensors) {
        encoder_->set_tensor(args.get_tensor(t.arg), t.index);  // binds_tensors() checked above
        // Counted by the planes it views, where the op bound them too (commit policy).
        for (plan::Arg plane : {t.data, t.scales})
          if (id<MTLBuffer> b = args.get(plane)) budget_.bind(size_t(b.length));
      }
      encoder_->dispatch(size3(d.threadgroups), size3(d.threads_per_threadgroup));
    }
    // `hold` is released with the completion, after `done` ran, so the op's buffers outlive the
    // GPU's use of them.
    encoder_->on_completed([hold = std::move(hold), done = std::move(done)](OpStatus status) {
      (void)hold;
      done(std::move(status));
    });
  }
  if (budget_.op_encoded()) flush();
  return true;
}

uint32_t CommandStream::max_threads(const plan::Dispatch& d) {
  const NSUInteger n =
      libraries_.pipeline(d.library, d.kernel, d.constants, d.threads_per_threadgroup).maxTotalThreadsPerThreadgroup;
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
  if (!encoder_->is_open()) return;
  encoder_->commit();
  budget_.committed();
  barriers_.end_batch();  // the next batch's encoder starts after this one's (batch_encoder.h)
}

}  // namespace mto::metal
