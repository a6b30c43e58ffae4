// The metal backend behind core/backend.h: tensors in shared MTLBuffers from the size-class pool,
// ops encoded from dispatch plans and finished from command-buffer completed handlers. Ops with
// no Metal kernel (dequantize, cast, affine quantize, linear with dense w, and the shapes and
// dtypes the plans reject; README.md lists them) return false and the caller runs the cpu backend
// over the same unified-memory buffers, in stream order.
#include "backend.h"

#include <algorithm>
#include <cstdlib>

#include "batch_encoder.h"
#include "ops.h"
#include "qtensor.h"
#include "user_kernel.h"

namespace mto::metal {
namespace {

// Released buffers kept for reuse: a quarter of the GPU's recommended working set, at most 1 GiB
// (256 MiB when Metal does not say).
size_t pool_cache_limit(const Capabilities& caps) {
  const uint64_t gib = uint64_t(1) << 30;
  if (caps.recommended_working_set == 0) return size_t(256) << 20;
  return size_t(std::min<uint64_t>(caps.recommended_working_set / 4, gib));
}

// Concurrent encoders with barriers where dispatches depend on each other (core/hazards.h), or
// METAL_TENSOROPS_SERIAL_ENCODER=1: a barrier between every two dispatches (debugging).
EncoderOrder encoder_order_from_env() { return encoder_order(std::getenv("METAL_TENSOROPS_SERIAL_ENCODER")); }

class MetalBackend final : public Backend {
 public:
  MetalBackend(id<MTLDevice> device, const Capabilities& caps, const TierChoice& choice)
      : device_(device),
        caps_(caps),
        choice_(choice),
        residency_(std::make_shared<ResidencyTracker>()),
        pool_(std::make_shared<MetalBufferPool>(device, pool_cache_limit(caps), residency_)),
        stream_(make_batch_encoder(device, caps, choice.tier, residency_, encoder_order_from_env()),
                ShaderLibraries::for_device(device, caps),
                commit_policy(caps.architecture, std::getenv("METAL_TENSOROPS_COMMIT_OPS"),
                              std::getenv("METAL_TENSOROPS_COMMIT_MB")),
                encoder_order_from_env()),
        ctx_{stream_, *pool_, choice.tier, ShaderLibraries::for_device(device, caps).unusable(),
             device_profile(caps.architecture, caps.ioregistry_gpu_cores)},
        user_kernels_(device) {}

  BackendInfo info() const override {
    BackendInfo i;
    i.backend = "metal";
    i.tier = choice_.tier;
    i.name = caps_.device_name;
    i.neural_accelerators = choice_.neural_accelerators;
    i.gpu_family = gpu_family_name(caps_);
    i.has_gpu_fields = true;
    i.unified_memory = caps_.unified_memory;
    i.recommended_working_set = caps_.recommended_working_set;
    i.os_version = os_version_string(caps_.os);
    i.os_source = caps_.os_source;
    const GpuCoreCount cores = gpu_core_count(caps_.ioregistry_gpu_cores, caps_.architecture);
    i.gpu_cores = cores.cores;
    i.gpu_cores_source = core_count_source_name(cores.source);
    i.fallbacks = ctx_.unusable.list();
    return i;
  }
  BufferPtr allocate(size_t bytes) override { return pool_->allocate(bytes); }
  bool buffer_stats(SizeClassPool::Stats* out) const override {
    *out = pool_->stats();
    return true;
  }
  void attach_device_view(QTensor& q) override { attach_scale_plane_tensor(device_, choice_.tier, residency_, q); }
  bool runs_on_caller() const override { return false; }
  void flush() override { stream_.flush(); }

  bool quantize(const Tensor& x, QTensor& out, Completion done) override {
    return metal::quantize(ctx_, x, out, std::move(done));
  }
  bool dequantize(const QTensor&, Tensor&, Completion) override { return false; }
  bool cast(const Tensor&, Tensor&, Completion) override { return false; }
  bool linear(const Operand& x, const Operand& w, const Tensor* bias, const LinearParams& p,
              Tensor& y, Completion done) override {
    return metal::linear(ctx_, x, w, bias, p, y, std::move(done));
  }
  bool matmul(const Tensor& a, const Tensor& b, const MatmulParams& p, Tensor& c,
              Completion done) override {
    return metal::matmul(ctx_, a, b, p, c, std::move(done));
  }
  bool attention(const Operand& q, const Operand& k, const Operand& v, const AttentionParams& p,
                 Tensor& o, Completion done) override {
    return metal::attention(ctx_, q, k, v, p, o, std::move(done));
  }
  bool unary(UnaryOp op, const Tensor& x, const ElementwiseParams& p, Tensor& out, Completion done) override {
    return metal::unary(ctx_, op, x, p, out, std::move(done));
  }
  bool binary(BinaryOp op, const Tensor& a, const Tensor& b, const ElementwiseParams& p, Tensor& out,
              Completion done) override {
    return metal::binary(ctx_, op, a, b, p, out, std::move(done));
  }
  bool norm(const Tensor& x, const Tensor* weight, const Tensor* bias, const NormParams& p, Tensor& out,
            Completion done) override {
    return metal::norm(ctx_, x, weight, bias, p, out, std::move(done));
  }
  bool rope(const Tensor& x, const Tensor* positions, const Tensor* freqs, const RopeParams& p, Tensor& out,
            Completion done) override {
    return metal::rope(ctx_, x, positions, freqs, p, out, std::move(done));
  }
  bool softmax(const Tensor& x, const RowsParams& p, Tensor& out, Completion done) override {
    return metal::softmax(ctx_, x, p, out, std::move(done));
  }
  bool copy(const std::vector<const Tensor*>& srcs, const std::vector<CopyPart>& parts, Tensor& dst,
            Completion done) override {
    return metal::copy(ctx_, srcs, parts, dst, std::move(done));
  }
  // argmax, topK, sample, embedding, groupedLinear, groupRows (pick.mm, embedding.mm, linear.mm,
  // group_rows.mm).
  bool argmax(const Tensor& x, const PickParams& p, Tensor& ids, Completion done) override {
    return metal::argmax(ctx_, x, p, ids, std::move(done));
  }
  bool top_k(const Tensor& x, const PickParams& p, Tensor& values, Tensor& ids, Completion done) override {
    return metal::top_k(ctx_, x, p, values, ids, std::move(done));
  }
  bool sample(const Tensor& logits, const PickParams& p, Tensor& ids, Completion done) override {
    return metal::sample(ctx_, logits, p, ids, std::move(done));
  }
  bool embedding(const Operand& table, const Tensor& ids, const EmbeddingParams& p, Tensor& out,
                 Completion done) override {
    return metal::embedding(ctx_, table, ids, p, out, std::move(done));
  }
  bool grouped_linear(const Operand& x, const Operand& w, const Tensor& group_sizes, const GroupedLinearParams& p,
                      Tensor& y, Completion done) override {
    return metal::grouped_linear(ctx_, x, w, group_sizes, p, y, std::move(done));
  }
  bool group_rows(const Tensor& ids, const GroupRowsParams& p, Tensor& sizes, Tensor& rows, Tensor& positions,
                  Completion done) override {
    return metal::group_rows(ctx_, ids, p, sizes, rows, positions, std::move(done));
  }
  // Users' kernels (user_kernel.h): compiled here, run in the stream like the ops.
  // A tier above this device's (TensorOps on a GPU or macOS without it, or one METAL_TENSOROPS_TIER
  // turned off) is E_BACKEND: Metal's own error would be an undeclared 'mpp'.
  bool compile_user_kernel(const std::string& name, const std::string& source, Tier tier, UserKernelCompiled done) override {
    if (tier > choice_.tier) {
      done(nullptr, OpStatus{code::Backend, "kernel '" + name + "' has tier '" + tier_name(tier) + "', above this device's tier '" +
                                                tier_name(choice_.tier) + "'" +
                                                (choice_.fallback_reason.empty() ? std::string() : " (" + choice_.fallback_reason + ")") +
                                                ": give it tier 'simdgroup', or run it where DeviceInfo.tier is '" +
                                                tier_name(tier) + "' or above"});
      return true;
    }
    user_kernels_.compile(name, source, msl_version_for(tier), std::move(done));
    return true;
  }
  bool user_kernel(const UserKernelLaunch& launch, Completion done) override {
    return metal::user_kernel(ctx_, launch, std::move(done));
  }

 private:
  id<MTLDevice> device_;
  Capabilities caps_;
  TierChoice choice_;
  // What the Metal 4 path keeps resident (residency.h); the pool and the scale-plane tensors feed it.
  std::shared_ptr<ResidencyTracker> residency_;
  std::shared_ptr<MetalBufferPool> pool_;
  CommandStream stream_;
  MetalContext ctx_;
  UserKernels user_kernels_;
};

}  // namespace

BackendPtr make_metal_backend(id<MTLDevice> device, const Capabilities& caps, const TierChoice& choice) {
  return std::make_shared<MetalBackend>(device, caps, choice);
}

}  // namespace mto::metal
