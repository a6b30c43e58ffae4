// Ranking a row too wide to sort in threadgroup memory, for pick_topk_wide and pick_sample_wide
// (shaders/pick.metal, which includes this after the reductions it uses). One threadgroup per
// row, any whole number of SIMD-groups; the cpu backend's order exactly (shaders/pick_sample.h:
// larger key first, then the lower index).
//
// Nothing here sorts the row. A radix walk finds the key at which a running total over the row,
// taken largest key first, first meets a condition: 4 bits of the key a step, each step one pass
// over the row that builds a 16-bin histogram (counts and, for sample, integer weight sums) of
// the elements whose key starts with the bits found so far; 8 passes fix the 32-bit key. The
// condition decides what is found: topK's k-th element (the count reaches k), topP's cut (the
// weight reaches top_p of the total) or the draw (the weight passes the target). The elements of
// one key follow each other by index and weigh the same, so the element wanted is then a
// position among that key's elements, found by one more pass (pick_nth_of_key). Histograms take
// no atomics: each thread counts its share in registers, then SIMD-group sums and one threadgroup
// step add them up.
//
// topK also needs its k elements in order: they are gathered in index order (pick_compact) and
// sorted by an LSD radix sort over the key's 4-bit digits (pick_sort_pass), stable, so equal keys
// keep index order: the cpu's tie rule without comparing indices.
#ifndef MTO_SHADERS_PICK_RADIX_H
#define MTO_SHADERS_PICK_RADIX_H

#include "pick_params.h"
#include "pick_sample.h"

#define PICK_BINS 16
#define PICK_WIDE_SIMDS (PICK_WIDE_MAX_THREADS / 32)

// What a walk looks for (PickWalk::mode).
#define PICK_WALK_COUNT 0  // the k-th element: the running count reaches k
#define PICK_WALK_TOP_P 1  // topP's cut: the running weight reaches top_p of the candidates' total
#define PICK_WALK_DRAW 2   // the draw: the running weight passes the target

struct PickWalk {
  // In: what is looked for.
  uint mode;
  uint k;             // PICK_WALK_COUNT
  ulong top_p;        // PICK_WALK_TOP_P: round(top_p * 2^32)
  ulong bits;         // PICK_WALK_DRAW: the row's random bits; the walk draws the target from
                      // them and the candidates' total
  ulong target;
  // Out: the key found, and over the candidates the count and weight of larger keys and of it.
  ulong total;        // the candidates' weight
  uint key;
  uint count_above, count_at;
  ulong weight_above, weight_at;
};

// The SIMD-group's sum of 64-bit values whose sum fits 64 bits, in three 32-bit simd_sums: the
// high halves add up to less than 2^32 then, and 32 16-bit parts to less than 2^21.
inline ulong pick_simd_sum_wide(ulong v) {
  const uint hi = simd_sum(uint(v >> 32));
  const uint mid = simd_sum(uint(v >> 16) & 0xFFFFu);
  const uint lo = simd_sum(uint(v) & 0xFFFFu);
  return (ulong(hi) << 32) + (ulong(mid) << 16) + ulong(lo);
}

// Every thread gets the histogram of the 4-bit digit at `shift` of the keys of the row's
// elements ranked >= least whose key agrees with `prefix` above the digit: counts in c[] and,
// when `weigh`, the weights (mto_sample_weight with m and scale) in w[]. part_c / part_w hold
// PICK_BINS * PICK_WIDE_SIMDS per-SIMD-group sums.
template <typename T>
inline void pick_histogram(device const T* row, uint n, ulong least, uint prefix, uint shift, bool weigh, float m,
                           float scale, thread uint* c, thread ulong* w, threadgroup uint* part_c,
                           threadgroup ulong* part_w, uint tid, uint threads, ushort simd, ushort lane) {
  for (int b = 0; b < PICK_BINS; ++b) {
    c[b] = 0;
    w[b] = 0;
  }
  // The bits above the digit (none for the first digit: a shift by 32 is undefined).
  const uint high = shift >= 28u ? 0u : 0xFFFFFFFFu << (shift + 4u);
  for (uint i = tid; i < n; i += threads) {
    const float v = float(row[i]);
    const uint key = mto_pick_key(v);
    if ((key & high) != prefix || mto_pick_rank(key, i) < least) continue;
    const uint d = (key >> shift) & 15u;
    c[d] += 1u;
    if (weigh) w[d] += mto_sample_weight(v, m, scale);
  }
  for (int b = 0; b < PICK_BINS; ++b) {
    const uint sc = simd_sum(c[b]);
    const ulong sw = weigh ? pick_simd_sum_wide(w[b]) : 0ul;
    if (lane == 0) {
      part_c[b * PICK_WIDE_SIMDS + simd] = sc;
      part_w[b * PICK_WIDE_SIMDS + simd] = sw;
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint groups = threads / 32u;
  for (int b = 0; b < PICK_BINS; ++b) {
    uint sc = 0;
    ulong sw = 0;
    for (uint s = 0; s < groups; ++s) {
      sc += part_c[b * PICK_WIDE_SIMDS + s];
      sw += part_w[b * PICK_WIDE_SIMDS + s];
    }
    c[b] = sc;
    w[b] = sw;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // read before the next histogram writes
}

// Whether a running count and weight (over the candidates, largest key first) meet the walk's
// condition. Monotone in both, as the walk needs.
inline bool pick_walk_meets(thread const PickWalk& wk, uint count, ulong weight) {
  if (wk.mode == PICK_WALK_COUNT) return count >= wk.k;
  if (wk.mode == PICK_WALK_TOP_P) return mto_sample_reaches(weight, wk.total, wk.top_p);
  return wk.target < weight;
}

// The walk over the candidates (the row's elements ranked >= least): the key at which the
// running total first meets wk's condition, into wk (every thread the same). Its first pass sees
// every candidate, so it gives the total (and the draw's target) before any condition is read.
template <typename T>
inline void pick_walk(device const T* row, uint n, ulong least, float m, float scale, thread PickWalk& wk,
                      threadgroup uint* part_c, threadgroup ulong* part_w, uint tid, uint threads, ushort simd,
                      ushort lane) {
  const bool weigh = wk.mode != PICK_WALK_COUNT;
  uint prefix = 0, count_above = 0;
  ulong weight_above = 0;
  uint c[PICK_BINS];
  ulong w[PICK_BINS];
  for (int shift = 28; shift >= 0; shift -= 4) {
    pick_histogram(row, n, least, prefix, uint(shift), weigh, m, scale, c, w, part_c, part_w, tid, threads, simd,
                   lane);
    if (shift == 28) {
      ulong total = 0;
      for (int b = 0; b < PICK_BINS; ++b) total += w[b];
      wk.total = total;
      if (wk.mode == PICK_WALK_DRAW) wk.target = mto_sample_target(wk.bits, total);
    }
    // Larger digits first; an empty bin never meets (a condition that holds at the start, topP
    // with top_p near 0, must stop at the first element, not before it). The condition holds
    // over all the candidates, so bin 0 is the answer when no larger one is.
    int b = PICK_BINS - 1;
    for (; b > 0; --b) {
      if (c[b] != 0u && pick_walk_meets(wk, count_above + c[b], weight_above + w[b])) break;
      count_above += c[b];
      weight_above += w[b];
    }
    prefix |= uint(b) << uint(shift);
    wk.count_at = c[b];
    wk.weight_at = w[b];
  }
  wk.key = prefix;
  wk.count_above = count_above;
  wk.weight_above = weight_above;
}

// The index of the j-th (from 1) element of the row whose key is `key`, in index order (the row
// holds at least j). Each thread takes a contiguous share, so one scan orders the shares.
template <typename T>
inline uint pick_nth_of_key(device const T* row, uint n, uint key, uint j, threadgroup ulong* slots,
                            threadgroup uint* found, uint tid, uint threads, ushort simd, ushort lane) {
  const uint share = (n + threads - 1u) / threads;
  const uint start = min(tid * share, n), end = min(start + share, n);
  uint mine = 0;
  for (uint i = start; i < end; ++i) mine += mto_pick_key(float(row[i])) == key ? 1u : 0u;
  uint before;
  pick_group_scan(mine, &before, slots, simd, lane, threads);
  if (before < j && j <= before + mine) {
    uint seen = before;
    for (uint i = start; i < end; ++i) {
      if (mto_pick_key(float(row[i])) != key) continue;
      if (++seen == j) {
        found[0] = i;
        break;
      }
    }
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint at = found[0];
  threadgroup_barrier(mem_flags::mem_threadgroup);  // read before a later call writes it
  return at;
}

// The indices of the row's elements ranked >= least, in index order, into out[0, count).
template <typename T>
inline void pick_compact(device const T* row, uint n, ulong least, device int* out, threadgroup ulong* slots,
                         uint tid, uint threads, ushort simd, ushort lane) {
  const uint share = (n + threads - 1u) / threads;
  const uint start = min(tid * share, n), end = min(start + share, n);
  uint mine = 0;
  for (uint i = start; i < end; ++i) mine += mto_pick_rank(mto_pick_key(float(row[i])), i) >= least ? 1u : 0u;
  uint at;
  pick_group_scan(mine, &at, slots, simd, lane, threads);
  for (uint i = start; i < end; ++i) {
    if (mto_pick_rank(mto_pick_key(float(row[i])), i) >= least) out[at++] = int(i);
  }
  threadgroup_barrier(mem_flags::mem_device);  // the sort reads what other threads wrote
}

// One stable pass of the sort: the row indices src[0, count) into dst, ordered by the 4-bit
// digit at `shift` of their elements' keys, larger digits first, each digit's entries in src's
// order (each thread moves a contiguous share, after the entries of every earlier share).
// Returns false, writing nothing, when every entry has the same digit (dst would equal src).
template <typename T>
inline bool pick_sort_pass(device const T* row, device const int* src, device int* dst, uint count, uint shift,
                           threadgroup uint* part_c, uint tid, uint threads, ushort simd, ushort lane) {
  const uint share = (count + threads - 1u) / threads;
  const uint start = min(tid * share, count), end = min(start + share, count);
  uint c[PICK_BINS];
  for (int b = 0; b < PICK_BINS; ++b) c[b] = 0;
  for (uint i = start; i < end; ++i) c[(mto_pick_key(float(row[src[i]])) >> shift) & 15u] += 1u;
  // c[b] becomes the entries of digit b in the shares before this thread's.
  for (int b = 0; b < PICK_BINS; ++b) {
    const uint mine = c[b];
    c[b] = simd_prefix_exclusive_sum(mine);
    const uint sc = simd_sum(mine);
    if (lane == 0) part_c[b * PICK_WIDE_SIMDS + simd] = sc;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  const uint groups = threads / 32u;
  uint total[PICK_BINS];
  bool one_digit = false;
  for (int b = 0; b < PICK_BINS; ++b) {
    uint all = 0;
    for (uint s = 0; s < groups; ++s) {
      const uint v = part_c[b * PICK_WIDE_SIMDS + s];
      if (s < uint(simd)) c[b] += v;
      all += v;
    }
    total[b] = all;
    one_digit = one_digit || all == count;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);  // read before the next pass writes
  if (one_digit) return false;
  uint first = 0;  // where digit b starts: after every larger digit
  for (int b = PICK_BINS - 1; b >= 0; --b) {
    c[b] += first;
    first += total[b];
  }
  for (uint i = start; i < end; ++i) {
    const int index = src[i];
    dst[c[(mto_pick_key(float(row[index])) >> shift) & 15u]++] = index;
  }
  threadgroup_barrier(mem_flags::mem_device);  // the next pass reads what other threads wrote
  return true;
}

#endif  // MTO_SHADERS_PICK_RADIX_H
