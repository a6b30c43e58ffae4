// Dispatch plans for the Metal kernels of shaders/: for an op, its shapes, formats and the tier,
// which kernel instance runs, over which grid, with which threadgroup size, what is bound at each
// buffer index and the exact bytes of the parameter struct.
//
// Every plan refuses empty work (a dimension of 0: E_SHAPE), which has nothing to dispatch and
// which Metal cannot express (a zero-size grid): the metal backend declines it and the cpu
// backend's ops write what it produces without a kernel (core/ops.h "Empty dimensions").
//
// Backend-neutral C++ compiled on every platform. The Metal host encodes exactly this plan
// (setComputePipelineState for `kernel`, setBuffer/setBytes per slot,
// dispatchThreadgroups:threadsPerThreadgroup:), and the MSL-on-CPU harness (test/msl) executes
// exactly this plan, so the harness checks the host's argument layout and geometry too.
// The model ops' plans (elementwise, norm, rope, softmax, copy) are in core/plan/<family>.h, one
// file per kernel family, sharing the types declared here.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "capabilities.h"
#include "dtype.h"
#include "formats.h"
#include "ops.h"
#include "pipeline_key.h"
#include "scale_plane.h"

namespace mto::plan {

// What the host binds at one [[buffer(n)]] index.
enum class Arg : uint8_t {
  Unused,   // declared by the kernel but never read for this plan: bind any valid buffer
  Params,   // the plan's `params` bytes (setBytes)
  X,        // dense input: activations or the tensor being quantized
  WCodes,   // quantized weight planes
  WScales,
  WBiases,
  Bias,     // linear bias [N], float32; norm bias [cols], any float dtype
  Y,        // dense output of the dtype the plan was made for (float32, float16 or bfloat16)
  Codes,    // quantize outputs
  Scales,
  A, B,     // dense matmul operands (plan_matmul); the output is Y
  // attention (plan_attention)
  Q, K, V,            // dense operands, or for k/v the mxfp8 codes
  KScales, VScales,   // mxfp8 k/v: E8M0 scales
  Mask,               // bool bytes or additive float elements
  O,                  // output of the dtype the plan was made for (q's)
  PartialO, PartialML,  // split decode, float32: written by the first pass, read by the merge pass
  // the model ops (core/plan/*.h): elementwise and norm/rope/softmax read X (or A, B) and write Y
  Weight,             // norm weight [cols], any float dtype (Bias: norm bias [cols]); groupedLinear's
                      // dense w [E, N, K]
  Positions,          // rope positions, int32 [L]; groupRows' positions output
  Freqs,              // rope frequencies, float32 [dims / 2]
  Src, Dst,           // a strided copy's source and destination (dst written in place)
  // argmax, topK, sample, embedding, groupedLinear, groupRows (plan/pick.h, plan/embedding.h,
  // plan/grouped_linear.h, plan/group_rows.h)
  Ids,         // int32 indices: picked (an output) or looked up (embedding's and groupRows' input)
  Status,      // int32: what a kernel found wrong with its input (it cannot throw); host-read
  GroupSizes,  // int32 group sizes [E]: groupedLinear's input, groupRows' output
  GroupSlots,  // scratch written by an op's first pass: groupedLinear's non-empty groups,
               // groupRows' per-chunk counts
  Sinks,       // attention sinks, float32 [Hq] (plan_attention)
  Rows,        // groupRows' int32 rows output (its positions output is Positions)
  Scratch,     // device memory a kernel keeps between its own phases, made by the host per op
               // (pick_topk_wide's sort buffer: plan/pick.h)
  WTensor,     // the quantized weight as ONE tensor argument (a TensorSlot, not a BufferSlot): an
               // MTLTensor whose data plane is WCodes and whose E8M0 scale plane is WScales
  KTensor,     // attention's mxfp8 K the same way: data plane K, scale plane KScales
};
// Arg values run from 0 to kArgCount - 1 (the host's table of bound buffers has one per value).
constexpr size_t kArgCount = size_t(Arg::KTensor) + 1;
const char* arg_name(Arg a);
// How a kernel uses the buffer bound to an argument, for the encoder's barriers (core/hazards.h):
// Read (never written by any kernel that binds it), Write (written, and possibly read too: a
// write conflicts with every earlier access, so Write covers read-and-write; an argument that is
// one op's output and another's input, Ids or Positions, is Write) or None (Params, Unused: no
// buffer the kernel touches). test/hazards.test.ts checks it against the shaders' declarations.
enum class Access : uint8_t { None, Read, Write };
Access arg_access(Arg a);

struct BufferSlot {
  uint32_t index;
  Arg arg;
};

// A tensor argument: the kernel declares `tensor<device F, dextents<int32_t, 2>, tensor_handle,
// tensor_blockwise<tensor_plane_scales, device metal_fp8_ue8m0_format, 32, 1>>` at
// [[buffer(index)]], and the host binds one MTLTensor there (the Metal 4 argument table's
// setResource:atBufferIndex: with the tensor's gpuResourceID; Metal 3's encoder has no tensor
// setter, so only the Metal 4 path runs such a plan). The tensor's data plane is the buffer of
// `data` (WCodes), its scale plane that of `scales` (WScales); the rest is the descriptor the
// host made it with (core/scale_plane.h's layout: native/metal/qtensor.mm), which the host
// checks its tensor against and the harness (test/msl) builds its tensor handle from.
struct TensorSlot {
  uint32_t index = 0;
  Arg arg = Arg::WTensor;
  Arg data = Arg::WCodes, scales = Arg::WScales;
  int data_type = 0;                 // raw MTLTensorDataType of the data plane (ScalePlaneData)
  int scale_type = 145;              // raw MTLTensorDataType of the scale plane: MetalFloat8UE8M0
  int64_t dims[2] = {0, 0};          // innermost first: columns (the blocked dimension), rows
  int64_t strides[2] = {1, 0};       // elements, innermost first (packed fp4 counts elements)
  int64_t block[2] = {32, 1};        // the scale plane's block factors, innermost first
};

// The slot (at `index`) of a tensor with the scale-plane layout l (l.ok): what
// qlinear_tensorops_mx's weight, attention's K on the tensorops-mx tier and a user kernel's
// scale-plane input are bound as. `arg`, `data` and `scales` are the weight's (WTensor, WCodes,
// WScales) unless given.
TensorSlot tensor_slot_of(const ScalePlaneLayout& l, uint32_t index, Arg arg = Arg::WTensor, Arg data = Arg::WCodes,
                          Arg scales = Arg::WScales);

struct Dispatch {
  std::string library;  // shader file stem: "quantize" (shaders/quantize.metal), "qlinear"
  std::string kernel;   // host name of the kernel instance in that library
  uint32_t threadgroups[3] = {1, 1, 1};         // grid, in threadgroups
  uint32_t threads_per_threadgroup[3] = {1, 1, 1};
  std::vector<BufferSlot> buffers;              // every buffer index the kernel declares, but
  std::vector<TensorSlot> tensors;              // the tensor arguments' (bound as MTLTensors)
  std::vector<uint8_t> params;                  // bound at the slot whose arg is Params
  // Function-constant specialisation of `kernel` (pipeline_key.h). Empty: these kernels are
  // specialised by template instance, one host name per format and input and output dtype.
  std::vector<FunctionConstant> constants;
  Tier tier = Tier::Simdgroup;                  // the tier whose kernels this plan uses
  std::string fallback_reason;                  // set when the requested tier's kernels are missing
};

// MX quantization of a dense [rows, cols] tensor (cols a multiple of 32) of dtype x to format f.
// Throws mto::Error (E_FORMAT, E_DTYPE, E_SHAPE) for what no kernel handles.
Dispatch plan_quantize(Format f, DType x, int64_t rows, int64_t cols);

// y[M, N] = x[M, K] @ w[N, K]^T (+ bias): x dense float32/float16/bfloat16, w quantized with
// format f and block/group size `block`, y of dtype `y`: float32, float16 or bfloat16 whatever x
// is (linear's outDtype), written by the kernel in that dtype (float32 accumulation, one rounding
// per element). M <= 8 runs the decode (GEMV-like) kernel, larger M the tiled kernel.
// Tier::TensorOps runs the tiled part with matmul2d (library "qlinear_tensorops", MSL 4.0) and
// decode with the shared decode kernel; Tier::TensorOpsMx runs mxfp8, mxfp8_e5m2 and mxfp4 weights
// with float16 x and 128-byte weight rows through scale-plane matmul2d (library
// "qlinear_tensorops_mx", MSL 4.1, tier TensorOpsMx) and everything else as Tier::TensorOps,
// saying why in fallback_reason. Throws E_BACKEND (Tier::Cpu), E_DTYPE (a bool x or y), E_FORMAT,
// E_SHAPE.
Dispatch plan_linear(Format f, int block, DType x, DType y, int64_t M, int64_t N, int64_t K, bool has_bias,
                     Tier tier, const DeviceProfile& device = {});

// y[batch, M, N] = a[batch, M, K] @ b[K, N] (b_batched: b[batch, K, N]), a and b dense of one
// dtype (float32, float16 or bfloat16) and y of that dtype too (matmul's rule, check_matmul),
// written by the kernel in it (float32 accumulation, one rounding per element). One tiled kernel
// for every M: simdgroup_matrix tiles on Tier::Simdgroup (library "matmul"), matmul2d on
// Tier::TensorOps and TensorOpsMx (library "matmul_tensorops", MSL 4.0; tensorops-mx adds nothing
// for dense operands). Throws E_DTYPE (other dtypes, a and b of different dtypes: convert one
// first, or y of another dtype), E_SHAPE, E_BACKEND (Tier::Cpu).
Dispatch plan_matmul(DType a, DType b, DType y, int64_t batch, int64_t M, int64_t N, int64_t K,
                     bool b_batched, Tier tier, const DeviceProfile& device = {});

// linear with a dense weight: y[M, N] = x[M, K] @ w[N, K]^T (+ float32 bias[N]), x, w and y of one
// dtype (float32, float16 or bfloat16), float32 accumulation: the simdgroup GEMM of plan_matmul
// with w as its transposed operand (library "matmul", MSL 3.1) on every tier, saying so in
// fallback_reason above the simdgroup tier. Throws as plan_matmul (other dtypes: the cpu
// backend runs them).
Dispatch plan_linear_dense(DType x, DType w, DType y, int64_t M, int64_t N, int64_t K, bool has_bias, Tier tier,
                           const DeviceProfile& device = {});

// The GEMM kernels' tile (plan_matmul, plan_linear's tensorops kernel): 64 x 64 (MLX's steel and
// NAX tile: each staged operand element feeds twice the products of a 32 x 32 tile) where the
// batch's y holds at least kBigTilesPerCore of them per GPU core of `device`, so that every core
// keeps several threadgroups to switch between; 32 x 32 below.
inline constexpr int64_t kBigTile = 64;
inline constexpr int64_t kBigTilesPerCore = 4;
bool takes_big_tiles(int64_t batch, int64_t M, int64_t N, const DeviceProfile& device);

// o[B, Hq, Lq, D] = softmax(q k^T * scale + mask) v (docs/design/API.md), from the validated
// parameters of check_attention (core/ops.h). q dense float32/float16/bfloat16; k/v dense of q's
// dtype (kv_format empty) or mxfp8 (Format::MXFP8_E4M3 / MXFP8_E5M2, blocks of 32 along D); the
// mask's dtype when p.mask is set; o of q's dtype (attention's rule, check_attention), written by
// the last pass in it (float32 softmax and accumulation, one rounding per element; the split
// decode's partial results are float32). Lq <= 8 runs the decode kernel, as one pass or, for long
// Lk with fewer threadgroups than the device's cores can take (DeviceProfile), split over the keys
// plus a merge pass; larger Lq the prefill kernel.
// Tier::TensorOps and Tier::TensorOpsMx run prefill with the matmul2d kernel of library
// "attention_tensorops" (P through threadgroup memory) or "attention_tensorops_mx" (P as a
// cooperative left input where it can be: macOS 27) and decode with the vector decode kernel. Throws E_SHAPE for head dims
// without kernels (accepted: 64, 80, 96, 128, 256; mxfp8 K/V needs D a multiple of 32) and for
// empty work (B, Hq, Lq or Lk of 0: the cpu backend writes it without a kernel), E_DTYPE
// (q not a float dtype, o not q's), E_FORMAT, E_BACKEND (Tier::Cpu).
struct AttentionPlan {
  std::vector<Dispatch> passes;  // run in order
  uint64_t partial_o_bytes = 0;  // split decode: scratch bound as PartialO / PartialML
  uint64_t partial_ml_bytes = 0;
  int splits = 1;
};
AttentionPlan plan_attention(const AttentionParams& p, DType q, DType o, bool kv_quantized, Format kv_format,
                             DType mask_dtype, Tier tier, const DeviceProfile& device = {});

}  // namespace mto::plan
