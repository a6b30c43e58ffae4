// AVX-512 VNNI int8 GEMM for prompt-sized linear with int8 activations (kernels/gemm_q8.h).
//
// A panel of 16 weight rows is unpacked once into int8 values w (affine4: q - 8, affine8: q - 128,
// those 8 or 128 scales moved into the bias, so that the block sums are not all of one sign and the
// bias term does not cancel most of them; mxint8: q; 4-bit tables: their int8 values), laid out so
// that each 64 bytes hold 4 consecutive elements of each of 16 rows. x is quantized once into
// unsigned bytes u = q + 128. vpdpbusd of the panel's 64 bytes against 4 bytes of one x row
// broadcast to every lane then adds, in lane i, the products of row i's elements k..k+3 with x's: 8
// steps make a block of 32, whose int32 sums, less 128 times the block's sum of w (exact, in
// integers), are converted once and scaled by the row's block scale times x's: one conversion and
// scaling per 8 multiply-adds. 8 rows of x at a time keep 8 independent chains of multiply-adds in
// flight (one chain waits on its last result). The panel (16 x K bytes plus its scales) stays in
// L1/L2 while every row of x passes it.
#include "../gemm_q8.h"
#include "../../core/portable.h"

#if MTO_X86_KERNELS
#include "avx512_common.h"
#include "../dot_q8_common.h"

#include <cstring>
#include <vector>

#define MTO_T512VNNI __attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx2,fma,f16c")))

namespace mto::kernels {
namespace {

using namespace avx512;

constexpr int kPanel = 16;      // weight rows unpacked together (one per int32 lane)
constexpr int kTile = 8;          // rows of x per pass over a panel

using q8::is_affine;
bool supported(const DotWeights& w) { return q8::supported(w, 128); }

// Prepared x, in tiles of kTile rows (the last padded with rows of code 0 and scale 0): per tile,
// for each 4 elements of K the 4 bytes (q + 128) of each of its rows, then per block the rows' scales
// d, then for affine weights per group the rows' sums of x' (d times the sum of the codes). The
// kernel then reaches every byte and scale of a tile from one pointer with constant offsets.
struct XLayout {
  int64_t K, blocks, groups, tiles;
  XLayout(const DotWeights& w, int64_t M)
      : K(w.K), blocks(w.K / 32), groups(is_affine(w.kind) ? w.K / w.group : 0), tiles((M + kTile - 1) / kTile) {}
  int64_t tile_bytes() const { return kTile * (K + 4 * blocks + 4 * groups); }
  size_t bytes() const { return size_t(tiles * tile_bytes()); }
  uint8_t* q(uint8_t* xp, int64_t t) const { return xp + t * tile_bytes(); }
  float* d(uint8_t* xp, int64_t t) const { return reinterpret_cast<float*>(q(xp, t) + kTile * K); }
  float* s(uint8_t* xp, int64_t t) const { return d(xp, t) + kTile * blocks; }
};

size_t x_bytes(const DotWeights& w, int64_t M) { return XLayout(w, M).bytes(); }

// One row of x into its tile's slots (row r of tile t); a padding row where x is null.
MTO_T512 void prepare_row(const DotWeights& w, const XLayout& l, const float* x, uint8_t* xp, int64_t t, int r) {
  const __m512i flip = _mm512_set1_epi32(128);
  uint8_t* q = l.q(xp, t) + r * 4;
  float* d = l.d(xp, t) + r;
  float* s = l.s(xp, t) + r;
  for (int64_t g = 0; g < l.groups; ++g) s[g * kTile] = 0;
  alignas(64) uint8_t u[32];
  for (int64_t b = 0; b < l.blocks; ++b) {
    __m512i a = _mm512_setzero_si512(), c = a;
    float db = 0;
    if (x && !quantize_x_block16(x + b * 32, a, c, db)) {
      alignas(32) int8_t blk[32];
      quantize_x_block(x + b * 32, blk, &db);
      const __m256i v = _mm256_load_si256(reinterpret_cast<const __m256i*>(blk));
      a = _mm512_cvtepi8_epi32(_mm256_castsi256_si128(v));
      c = _mm512_cvtepi8_epi32(_mm256_extracti128_si256(v, 1));
    }
    d[b * kTile] = db;
    if (l.groups) s[(b * 32 / w.group) * kTile] += db * float(_mm512_reduce_add_epi32(_mm512_add_epi32(a, c)));
    _mm_store_si128(reinterpret_cast<__m128i*>(u), _mm512_cvtepi32_epi8(_mm512_add_epi32(a, flip)));
    _mm_store_si128(reinterpret_cast<__m128i*>(u + 16), _mm512_cvtepi32_epi8(_mm512_add_epi32(c, flip)));
    for (int j = 0; j < 8; ++j) std::memcpy(q + (b * 8 + j) * 4 * kTile, u + 4 * j, 4);
  }
}

MTO_T512 void prepare_x(const DotWeights& w, const float* x, int64_t ldx, int64_t M, int64_t m0, int64_t m1,
                        uint8_t* xp) {
  const XLayout l(w, M);
  for (int64_t m = m0; m < m1; ++m) prepare_row(w, l, x + m * ldx, xp, m / kTile, int(m % kTile));
  if (m1 == M)  // the last tile's padding rows
    for (int64_t m = M; m < l.tiles * kTile; ++m) prepare_row(w, l, nullptr, xp, m / kTile, int(m % kTile));
}

// One unpacked panel: codes (K / 4 steps of 64 bytes), per block the 128-times-sum-of-w correction
// and the scales, per group the affine bias (lane i: row i's).
struct Panel {
  std::vector<int8_t> w;
  std::vector<int32_t> corr;
  std::vector<float> scale, bias;
  Panel(int64_t K, int64_t groups) : w(size_t(K) * kPanel), corr(size_t(K / 32) * 16), scale(size_t(K / 32) * 16), bias(size_t(groups) * 16) {}
};

// The int8 value of each of a row's K elements (see the file comment), and 128 times each block's
// sum of them.
MTO_T512 void row_values(const DotWeights& w, int64_t row, const int8_t (&tab)[16], int8_t* out, int32_t* corr) {
  const uint8_t* c = w.codes + row * w.row_bytes;
  const int64_t K = w.K;
  if (w.kind == DotCodes::Uint4 || w.kind == DotCodes::Lut4) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(tab)));
    int64_t j = 0;
    for (; j + 32 <= K / 2; j += 32) {  // 32 bytes: 64 elements, two blocks
      const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + j));
      const __m256i lo = _mm256_shuffle_epi8(table, _mm256_and_si256(v, lo4));
      const __m256i hi = _mm256_shuffle_epi8(table, _mm256_and_si256(_mm256_srli_epi16(v, 4), lo4));
      // Byte t holds elements 2t (low nibble) and 2t + 1: interleave, then put the lanes in order.
      const __m256i a = _mm256_unpacklo_epi8(lo, hi), b = _mm256_unpackhi_epi8(lo, hi);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * j), _mm256_permute2x128_si256(a, b, 0x20));
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + 2 * j + 32), _mm256_permute2x128_si256(a, b, 0x31));
    }
    for (; j < K / 2; ++j) {  // an odd last block
      out[2 * j] = tab[c[j] & 15];
      out[2 * j + 1] = tab[c[j] >> 4];
    }
  } else if (w.kind == DotCodes::Uint8) {
    const __m256i flip = _mm256_set1_epi8(int8_t(0x80));
    for (int64_t k = 0; k < K; k += 32)
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + k),
                          _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + k)), flip));
  } else {
    std::memcpy(out, c, size_t(K));
  }
  // Sums of int8 as sums of unsigned bytes (v + 128) less 32 * 128 a block.
  const __m256i flip = _mm256_set1_epi8(int8_t(0x80));
  for (int64_t b = 0; b < K / 32; ++b) {
    const __m256i u = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(out + b * 32)), flip);
    const __m256i s = _mm256_sad_epu8(u, _mm256_setzero_si256());
    const __m128i t = _mm_add_epi64(_mm256_castsi256_si128(s), _mm256_extracti128_si256(s, 1));
    corr[b] = 128 * (int32_t(_mm_cvtsi128_si64(t) + _mm_extract_epi64(t, 1)) - 32 * 128);
  }
}

MTO_T512 void unpack_panel(const DotWeights& w, int64_t n0, int nrows, const int8_t (&table)[16], float mul,
                           std::vector<int8_t>& row, std::vector<int32_t>& corr, Panel& p) {
  const int64_t K = w.K, blocks = K / 32;
  if (nrows < kPanel) {  // rows past the matrix: zeros
    std::fill(p.w.begin(), p.w.end(), int8_t(0));
    std::fill(p.corr.begin(), p.corr.end(), 0);
    std::fill(p.scale.begin(), p.scale.end(), 0.0f);
    std::fill(p.bias.begin(), p.bias.end(), 0.0f);
  }
  alignas(64) float s16[16];
  for (int i = 0; i < nrows; ++i) {
    const int64_t n = n0 + i;
    row_values(w, n, table, row.data(), corr.data());
    int8_t* dst = p.w.data() + i * 4;
    for (int64_t k = 0; k < K; k += 4) std::memcpy(dst + k * kPanel, &row[size_t(k)], 4);
    for (int64_t b = 0; b < blocks; ++b) p.corr[size_t(b * 16 + i)] = corr[size_t(b)];
    for (int64_t b0 = 0; b0 < blocks; b0 += 16) {
      const int nb = int(std::min<int64_t>(16, blocks - b0));
      _mm512_store_ps(s16, block_scales(w, n, b0, nb, mul));
      for (int j = 0; j < nb; ++j) p.scale[size_t((b0 + j) * 16 + i)] = s16[j];
    }
    if (is_affine(w.kind)) {
      const int64_t groups = K / w.group;
      const uint16_t* bh = w.biases ? w.biases + n * w.row_groups : nullptr;
      const uint16_t* sh = w.scales + n * w.row_groups;
      for (int64_t g = 0; g < groups; ++g) {
        const float b = bh ? _cvtsh_ss(bh[g]) : w.centred_bias * _cvtsh_ss(sh[g]);
        // The values are q - c here (c = 128 for affine8, 8 for affine4): s q + b = s (q - c) + (b + c s).
        const float c = w.kind == DotCodes::Uint8 ? 128.0f : 8.0f;
        p.bias[size_t(g * 16 + i)] = b + c * _cvtsh_ss(sh[g]);
      }
    }
  }
}

// Tile t of x (its first `valid` rows real) against the panel; y columns n0 .. n0 + nrows - 1.
MTO_T512VNNI void tile(const DotWeights& w, const Panel& p, const XLayout& l, const uint8_t* xp, int64_t t,
                       int valid, int64_t n0, int nrows, float* y, int64_t ldy) {
  const int64_t blocks = l.blocks;
  uint8_t* base = const_cast<uint8_t*>(xp);
  const uint8_t* q = l.q(base, t);
  const float* d = l.d(base, t);
  const float* s = l.s(base, t);
  __m512 acc[kTile];
  MTO_UNROLL_ALL
  for (int m = 0; m < kTile; ++m) acc[m] = _mm512_setzero_ps();
  const int per_group = is_affine(w.kind) ? w.group / 32 : 0;
  const int8_t* pw = p.w.data();
  for (int64_t b = 0; b < blocks; ++b, q += 32 * kTile, pw += 8 * 64) {
    __m512i isum[kTile];
    MTO_UNROLL_ALL
    for (int m = 0; m < kTile; ++m) isum[m] = _mm512_setzero_si512();
    MTO_UNROLL_ALL
    for (int j = 0; j < 8; ++j) {
      const __m512i wv = _mm512_loadu_si512(pw + j * 64);
      MTO_UNROLL_ALL
      for (int m = 0; m < kTile; ++m) {
        int32_t xv;
        std::memcpy(&xv, q + (j * kTile + m) * 4, 4);
        isum[m] = _mm512_dpbusd_epi32(isum[m], _mm512_set1_epi32(xv), wv);
      }
    }
    const __m512i corr = _mm512_loadu_si512(&p.corr[size_t(b * 16)]);
    const __m512 sc = _mm512_loadu_ps(&p.scale[size_t(b * 16)]);
    MTO_UNROLL_ALL
    for (int m = 0; m < kTile; ++m)
      acc[m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(isum[m], corr)), _mm512_mul_ps(sc, _mm512_set1_ps(d[b * kTile + m])), acc[m]);
    if (per_group && b % per_group == 0) {
      const int64_t g = b / per_group;
      const __m512 bv = _mm512_loadu_ps(&p.bias[size_t(g * 16)]);
      MTO_UNROLL_ALL
      for (int m = 0; m < kTile; ++m) acc[m] = _mm512_fmadd_ps(bv, _mm512_set1_ps(s[g * kTile + m]), acc[m]);
    }
  }
  const __mmask16 store = __mmask16((1u << nrows) - 1u);
  const int64_t m0 = t * kTile;
  MTO_UNROLL_ALL
  for (int m = 0; m < kTile; ++m)
    if (m < valid) _mm512_mask_storeu_ps(y + (m0 + m) * ldy + n0, store, acc[m]);
}

MTO_T512 void rows(const DotWeights& w, int64_t n0, int64_t n1, const uint8_t* xp, int64_t M, float* y,
                   int64_t ldy) {
  int8_t table[16];
  float mul = 1.0f;
  if (w.kind == DotCodes::Lut4) {
    dot_int8_table(w, table, &mul);  // supported() checked it
  } else {
    for (int i = 0; i < 16; ++i) table[i] = int8_t(i - 8);  // affine4, centred (see the file comment)
    if (w.kind == DotCodes::Int8) mul = 0.015625f;     // mxint8: q * 2^-6
  }
  const XLayout l(w, M);
  Panel p(w.K, is_affine(w.kind) ? w.K / w.group : 0);
  std::vector<int8_t> row(size_t(w.K));
  std::vector<int32_t> corr(size_t(w.K / 32));
  // Each panel unpacked once, then every tile of x past it: x streams from L2/L3 in address order,
  // which the prefetchers follow (slices of x kept in L2, each re-unpacking the panels, measured
  // slower: 350-420 against 460-630 GOP/s for 512 x 2048 x 2048 and 512 x 2048 x 8192 affine4).
  for (int64_t n = n0; n < n1; n += kPanel) {
    const int nrows = int(std::min<int64_t>(kPanel, n1 - n));
    unpack_panel(w, n, nrows, table, mul, row, corr, p);
    for (int64_t t = 0; t < l.tiles; ++t) tile(w, p, l, xp, t, int(std::min<int64_t>(kTile, M - t * kTile)), n, nrows, y, ldy);
  }
}

constexpr GemmQ8Kernels kGemmQ8Avx512{"avx512-vnni-gemm-q8", supported, x_bytes, prepare_x, rows};

}  // namespace

const GemmQ8Kernels* gemm_q8_kernels_avx512() { return &kGemmQ8Avx512; }

}  // namespace mto::kernels

#else

namespace mto::kernels {
const GemmQ8Kernels* gemm_q8_kernels_avx512() { return nullptr; }
}  // namespace mto::kernels

#endif
