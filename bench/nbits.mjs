// Weights in onnxruntime's MatMulNBits layout (com.microsoft, docs/ContribOperators.md):
// B uint8 [N, k_blocks, block * bits / 8] (4-bit: element 2i in the low nibble of byte i),
// scales float32 [N, k_blocks], optional zero_points uint8 [N, ceil(k_blocks * bits / 8)] packed
// like B (default zero point 2^(bits-1)); weight = (q - zero_point) * scale.

/** Symmetric 4- or 8-bit block quantization of w [N, K] (no zero_points input: default zp). */
export function quantizeSymmetric(w, N, K, bits, block = 32) {
  const kb = K / block;
  const qmax = bits === 4 ? 7 : 127;
  const zp = 1 << (bits - 1);
  const blob = (block * bits) / 8;
  const B = new Uint8Array(N * kb * blob);
  const scales = new Float32Array(N * kb);
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < kb; b++) {
      const base = n * K + b * block;
      let amax = 0;
      for (let i = 0; i < block; i++) amax = Math.max(amax, Math.abs(w[base + i]));
      const s = amax / qmax;
      const inv = s > 0 ? 1 / s : 0;
      scales[n * kb + b] = s;
      const out = (n * kb + b) * blob;
      for (let i = 0; i < block; i++) {
        const q = Math.max(-zp, Math.min(zp - 1, Math.round(w[base + i] * inv))) + zp;
        if (bits === 8) B[out + i] = q;
        else B[out + (i >> 1)] |= (i & 1) ? q << 4 : q;
      }
    }
  }
  return { bits, block, B, scales, zeroPoints: null };
}

/** Asymmetric 4-bit (min/max, packed uint8 zero points), as onnxruntime's own quantizer makes. */
export function quantizeAsymmetric4(w, N, K, block = 32) {
  const kb = K / block;
  const blob = block / 2;
  const B = new Uint8Array(N * kb * blob);
  const scales = new Float32Array(N * kb);
  const zeroPoints = new Uint8Array(N * Math.ceil(kb / 2));
  const zpRow = Math.ceil(kb / 2);
  for (let n = 0; n < N; n++) {
    for (let b = 0; b < kb; b++) {
      const base = n * K + b * block;
      let lo = 0, hi = 0;  // the range always includes 0, so 0 is exact
      for (let i = 0; i < block; i++) {
        lo = Math.min(lo, w[base + i]);
        hi = Math.max(hi, w[base + i]);
      }
      const s = (hi - lo) / 15;
      const inv = s > 0 ? 1 / s : 0;
      const zp = s > 0 ? Math.max(0, Math.min(15, Math.round(-lo * inv))) : 8;
      scales[n * kb + b] = s;
      zeroPoints[n * zpRow + (b >> 1)] |= (b & 1) ? zp << 4 : zp;
      const out = (n * kb + b) * blob;
      for (let i = 0; i < block; i++) {
        const q = Math.max(0, Math.min(15, Math.round(w[base + i] * inv) + zp));
        B[out + (i >> 1)] |= (i & 1) ? q << 4 : q;
      }
    }
  }
  return { bits: 4, block, B, scales, zeroPoints };
}

/**
 * Our mxint8 weights (codes: int8 two's complement, value q * 2^-6 * 2^(e - 127)) in 8-bit
 * MatMulNBits form, exactly: q + 128 with the default zero point 128, scale 2^(e - 133).
 */
export function fromMxint8(codes, scaleBytes, N, K) {
  const block = 32;
  const B = new Uint8Array(codes.length);
  for (let i = 0; i < codes.length; i++) B[i] = (codes[i] + 128) & 0xff;
  const scales = new Float32Array(scaleBytes.length);
  for (let i = 0; i < scaleBytes.length; i++) scales[i] = 2 ** (scaleBytes[i] - 133);
  if (B.length !== N * K || scales.length !== (N * K) / block) throw new Error('mxint8 planes do not fit [N, K]');
  return { bits: 8, block, B, scales, zeroPoints: null };
}
