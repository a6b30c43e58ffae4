// MX quantization on the GPU: float32/float16/bfloat16 rows -> packed codes + E8M0 scales, bit
// for bit what the cpu quantizer produces (docs/design/API.md "Quantized formats"; mx_encode.h).
//
// One SIMD-group per 32-element block, one lane per element: the block's amax is a simd_max of
// magnitude bits (NaN and inf sort above every finite value, so one integer max finds them), each
// lane encodes its element, and sub-byte codes are gathered into bytes with simd_shuffle_down so
// every code byte is written once, by one lane. Reads of x are contiguous across the SIMD-group.
#include <metal_stdlib>

#include "mx_dequant.h"
#include "mx_encode.h"
#include "quantize_params.h"

using namespace metal;

template <int FMT, typename T>
[[kernel]] void mx_quantize(device const T* x [[buffer(MXQ_BUFFER_X)]],
                            device uchar* codes [[buffer(MXQ_BUFFER_CODES)]],
                            device uchar* scales [[buffer(MXQ_BUFFER_SCALES)]],
                            constant MxQuantizeParams& p [[buffer(MXQ_BUFFER_PARAMS)]],
                            uint group [[threadgroup_position_in_grid]],
                            ushort simd [[simdgroup_index_in_threadgroup]],
                            ushort lane [[thread_index_in_simdgroup]]) {
  const int bits = mto_format_bits(FMT);
  const uint block = group * MXQ_SIMDGROUPS_PER_THREADGROUP + simd;
  // The last threadgroup may hold SIMD-groups past the last block. They leave as a whole, and no
  // barrier follows, so the rest of the threadgroup is unaffected.
  if (block >= uint(p.total_blocks)) return;

  const uint row = block / uint(p.blocks_per_row);
  const uint col = (block % uint(p.blocks_per_row)) * uint(MTO_MX_BLOCK) + lane;
  const uint bits_x = as_type<uint>(float(x[ulong(row) * ulong(p.cols) + col]));
  const uint amax = simd_max(bits_x & 0x7FFFFFFFu);

  uint code = 0;  // a NaN/inf block stores zero codes under the NaN scale
  uint scale_byte = MTO_E8M0_NAN;
  if (amax < 0x7F800000u) {  // the same in every lane: amax is the block's
    const int e = mto_mx_scale_exponent(amax, mto_format_emax(FMT));
    scale_byte = uint(e + 127);
    code = mto_encode_mx_element(mto_format_element(FMT), mto_scale_pow2_bits(bits_x, -e));
  }
  if (lane == 0) scales[block] = uchar(scale_byte);

  // A block's codes are 4 * bits bytes; rows hold whole blocks, so block b starts at b * 4 * bits.
  device uchar* out = codes + ulong(block) * ulong(4 * bits);
  if (bits == 8) {
    out[lane] = uchar(code);
  } else if (bits == 4) {  // element 2j in the low nibble of byte j
    const uint next = simd_shuffle_down(code, ushort(1));
    if ((lane & 1) == 0) out[lane / 2] = uchar(code | (next << 4));
  } else if (bits == 2) {  // element 4j in bits 0-1 of byte j
    const uint c1 = simd_shuffle_down(code, ushort(1));
    const uint c2 = simd_shuffle_down(code, ushort(2));
    const uint c3 = simd_shuffle_down(code, ushort(3));
    if ((lane & 3) == 0) out[lane / 4] = uchar(code | (c1 << 2) | (c2 << 4) | (c3 << 6));
  } else {  // 6 bits: LSB-first stream, 4 codes in 3 bytes
    const uint c1 = simd_shuffle_down(code, ushort(1));
    const uint c2 = simd_shuffle_down(code, ushort(2));
    const uint c3 = simd_shuffle_down(code, ushort(3));
    if ((lane & 3) == 0) {
      device uchar* o = out + (lane / 4) * 3;
      o[0] = uchar(code | (c1 << 6));
      o[1] = uchar((c1 >> 2) | (c2 << 4));
      o[2] = uchar((c2 >> 4) | (c3 << 2));
    }
  }
}

#define MTO_QUANTIZE_FORMAT(fmt, name)                                          \
  MTO_KERNEL_INSTANCE("mx_quantize_" name "_f32", mx_quantize, fmt, float)      \
  MTO_KERNEL_INSTANCE("mx_quantize_" name "_f16", mx_quantize, fmt, half)       \
  MTO_KERNEL_INSTANCE("mx_quantize_" name "_bf16", mx_quantize, fmt, bfloat)

MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXFP8_E4M3, "mxfp8")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXFP8_E5M2, "mxfp8_e5m2")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXFP6_E3M2, "mxfp6_e3m2")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXFP6_E2M3, "mxfp6_e2m3")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXFP4, "mxfp4")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXINT8, "mxint8")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXINT4, "mxint4")
MTO_QUANTIZE_FORMAT(MTO_FORMAT_MXINT2, "mxint2")
