// argmax, topK and sample over the last axis for the simdgroup tier, one threadgroup per row,
// float32/float16/bfloat16 x read as float32 (exact). Every element becomes a 64-bit rank
// (shaders/pick_sample.h: NaN largest, -0 = +0, ties to the lower index), so the cpu backend's
// order is reproduced by integer comparisons. Slots, modes and limits: pick_params.h; which
// kernel runs: native/core/plan/pick.cc.
//
//   pick_argmax: each thread keeps the best rank of its strided share of the row (no barrier while
//   memory streams in), then simd_max over the rank's halves and one threadgroup step (the shape
//   of MLX's arg_reduce and ggml's kernel_argmax).
//   pick_topk: each thread keeps its PICK_KEEP best ranks while it scans; the threadgroup sorts all
//   of them (bitonic, in threadgroup memory) and reads the k-th best, tau. The k best candidates
//   are the answer unless some thread that saw more than PICK_KEEP elements kept PICK_KEEP ranks
//   >= tau (it may have dropped one that belongs): then every element ranked >= tau is collected
//   and sorted (tau raised by bisection first if they do not fit). Rare for k << threads; exact
//   always.
//   pick_sample: the same candidates (ranked mode), or the row in index order (the range holding
//   the draw narrowed 16-fold a step, one part per SIMD-group), weighed with the integer weights
//   of pick_sample.h: the same id as the cpu backend, bit for bit.
//   pick_topk_wide, pick_sample_wide: k or the candidates past what threadgroup memory sorts (a
//   topP over a whole vocabulary row): radix walks over the row's keys, no sort of the row
//   (shaders/pick_radix.h); topK's k elements sorted by a stable radix sort in device memory.
#include <metal_stdlib>

#include "pick_params.h"
#include "pick_sample.h"

using namespace metal;

// The kernels carry [[max_total_threads_per_threadgroup(PICK_MAX_THREADS or PICK_WIDE_MAX_THREADS)]]:
// the register budget for the most threads a plan launches; a pipeline that still allows fewer
// gets plans within its maxTotalThreadsPerThreadgroup (plan/pick.h).

// ---- SIMD-group and threadgroup reductions. 64-bit values travel as two 32-bit halves (the
// SIMD-group functions are certain for 32-bit types).

// The largest rank of the SIMD-group: the largest high half, then the largest low half among the
// lanes holding it.
inline ulong pick_simd_max_rank(ulong r) {
  const uint hi = uint(r >> 32), lo = uint(r);
  const uint mh = simd_max(hi);
  const uint ml = simd_max(hi == mh ? lo : 0u);
  return (ulong(mh) << 32) | ulong(ml);
}
inline ulong pick_simd_sum_u64(ulong v) {
  for (ushort d = 16; d > 0; d >>= 1) {
    const uint lo = simd_shuffle_xor(uint(v), d);
    const uint hi = simd_shuffle_xor(uint(v >> 32), d);
    v += (ulong(hi) << 32) | ulong(lo);
  }
  return v;
}
// Inclusive prefix sum over the lanes.
inline ulong pick_simd_prefix_u64(ulong v, ushort lane) {
  for (ushort d = 1; d < 32; d <<= 1) {
    const uint lo = simd_shuffle_up(uint(v), d);
    const uint hi = simd_shuffle_up(uint(v >> 32), d);
    if (lane >= d) v += (ulong(hi) << 32) | ulong(lo);
  }
  return v;
}
inline ulong pick_simd_broadcast_u64(ulong v, ushort lane) {
  return (ulong(simd_broadcast(uint(v >> 32), lane)) << 32) | ulong(simd_broadcast(uint(v), lane));
}

// Threadgroup-wide results through one slot per SIMD-group; every thread gets the result. The
// second barrier lets the slots be reused at once.
inline ulong pick_group_max_rank(ulong r, threadgroup ulong* slots, ushort simd, ushort lane, uint threads) {
  r = pick_simd_max_rank(r);
  if (lane == 0) slots[simd] = r;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  ulong best = 0;
  for (uint s = 0; s < threads / 32u; ++s) best = slots[s] > best ? slots[s] : best;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return best;
}
inline uint pick_group_min(uint v, threadgroup ulong* slots, ushort simd, ushort lane, uint threads) {
  v = simd_min(v);
  if (lane == 0) slots[simd] = ulong(v);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint low = 0xFFFFFFFFu;
  for (uint s = 0; s < threads / 32u; ++s) low = min(low, uint(slots[s]));
  threadgroup_barrier(mem_flags::mem_threadgroup);
  return low;
}
// The sum of v over the threadgroup, and in *before the sum over the threads before this one.
inline uint pick_group_scan(uint v, thread uint* before, threadgroup ulong* slots, ushort simd, ushort lane,
                            uint threads) {
  const uint mine = simd_prefix_exclusive_sum(v);
  const uint total = simd_sum(v);
  if (lane == 0) slots[simd] = ulong(total);
  threadgroup_barrier(mem_flags::mem_threadgroup);
  uint all = 0, earlier = 0;
  for (uint s = 0; s < threads / 32u; ++s) {
    if (s < uint(simd)) earlier += uint(slots[s]);
    all += uint(slots[s]);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  *before = earlier + mine;
  return all;
}

#include "pick_radix.h"  // the wide kernels' passes, which use the reductions above

// Sorts ranks[0, size) largest first (size a power of two, at most 2 * threads * PICK_KEEP
// pairs per thread and stage): a bitonic network, one barrier per stage. Every aligned run of
// `run` entries must be bitonic already (any run of 2 is; so is a thread's PICK_KEEP ranks kept
// largest first), so the merges start at blocks of that size.
inline void pick_sort(threadgroup ulong* ranks, uint size, uint run, uint tid, uint threads) {
  for (uint block = run; block <= size; block <<= 1) {
    for (uint stride = block >> 1; stride > 0; stride >>= 1) {
      for (uint pair = tid; pair < size / 2u; pair += threads) {
        const uint i = (pair / stride) * 2u * stride + pair % stride;
        const uint j = i + stride;
        const ulong a = ranks[i], b = ranks[j];
        // Blocks alternate direction so that each merge sees a bitonic sequence; the last
        // block is the whole buffer, largest first.
        const bool largest_first = (i & block) == 0u;
        if (largest_first ? a < b : a > b) {
          ranks[i] = b;
          ranks[j] = a;
        }
      }
      threadgroup_barrier(mem_flags::mem_threadgroup);
    }
  }
}

// ---- One thread's pass over its strided share of a row (elements tid, tid + threads, ...).
// Keeps the KEEP best ranks, largest first in best[] (0: empty), and the index of the first NaN
// or +inf seen (0xFFFFFFFF: none) for sample. Four loads are issued before any is used, so that
// memory streams while ranks are compared.
template <typename T, int KEEP>
inline void pick_scan(device const T* row, uint n, uint tid, uint threads, thread ulong (&best)[KEEP],
                      thread uint* first_bad) {
  for (int j = 0; j < KEEP; ++j) best[j] = 0;
  uint bad = 0xFFFFFFFFu;
  for (uint base = tid; base < n; base += 4u * threads) {
    float v[4];
    for (int u = 0; u < 4; ++u) {
      const uint i = base + uint(u) * threads;
      v[u] = i < n ? float(row[i]) : 0.0f;
    }
    for (int u = 0; u < 4; ++u) {
      const uint i = base + uint(u) * threads;
      if (i >= n) break;
      const uint key = mto_pick_key(v[u]);
      if ((key == MTO_PICK_KEY_NAN || key == MTO_PICK_KEY_POS_INF) && bad == 0xFFFFFFFFu) bad = i;
      ulong r = mto_pick_rank(key, i);
      if (r <= best[KEEP - 1]) continue;  // most elements, once the list has filled
      // Insertion into the descending list: r moves down past every smaller entry.
      for (int j = 0; j < KEEP; ++j) {
        if (r > best[j]) {
          const ulong t = best[j];
          best[j] = r;
          r = t;
        }
      }
    }
  }
  *first_bad = bad;
}

// The number of elements of the row ranked >= tau (every thread gets it).
template <typename T>
inline uint pick_count_from(device const T* row, uint n, ulong tau, uint tid, uint threads,
                            threadgroup ulong* slots, ushort simd, ushort lane) {
  uint count = 0;
  for (uint i = tid; i < n; i += threads) count += mto_pick_rank(mto_pick_key(float(row[i])), i) >= tau ? 1u : 0u;
  uint before;
  return pick_group_scan(count, &before, slots, simd, lane, threads);
}

// The k best ranks of the row, largest first, in ranks[0, k) (k <= PICK_MAX_K, k <= n); ranks
// holds threads * PICK_KEEP entries. best[] and first_bad come from pick_scan<T, PICK_KEEP>.
template <typename T>
inline void pick_select(device const T* row, uint n, uint k, thread const ulong (&best)[PICK_KEEP],
                        threadgroup ulong* ranks, threadgroup ulong* slots, uint tid, uint threads, ushort simd,
                        ushort lane) {
  const uint size = threads * PICK_KEEP;
  for (int j = 0; j < PICK_KEEP; ++j) ranks[tid * PICK_KEEP + uint(j)] = best[j];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  pick_sort(ranks, size, PICK_KEEP, tid, threads);
  ulong tau = ranks[k - 1u];
  // A thread may have dropped an element that belongs only if it saw more than PICK_KEEP and kept
  // PICK_KEEP ranks >= tau (what it dropped ranks below its last one).
  const uint seen = n > tid ? (n - 1u - tid) / threads + 1u : 0u;
  const bool unsure = seen > uint(PICK_KEEP) && best[PICK_KEEP - 1] >= tau;
  if (pick_group_min(unsure ? 0u : 1u, slots, simd, lane, threads) != 0u) return;

  // Exact path: at least k elements rank >= tau (the candidates above it are elements). Raise tau
  // by bisection until they fit in the buffer, keeping at least k (each step passes one element's
  // rank at most, so the count walks down through every value from the start to 1).
  uint count = pick_count_from(row, n, tau, tid, threads, slots, simd, lane);
  // count(lo) >= k; count(hi) = 1 < k (hi is the best rank, and k >= 2 here: with k = 1, tau is
  // the best rank, which no thread can hold PICK_KEEP times).
  ulong lo = tau, hi = ranks[0];
  while (count > size) {
    const ulong mid = lo + (hi - lo) / 2u;
    const uint c = pick_count_from(row, n, mid, tid, threads, slots, simd, lane);
    if (c < k) {
      hi = mid;
    } else {
      lo = mid;
      count = c;
    }
  }
  tau = lo;
  uint mine = 0;
  for (uint i = tid; i < n; i += threads) mine += mto_pick_rank(mto_pick_key(float(row[i])), i) >= tau ? 1u : 0u;
  uint at;
  pick_group_scan(mine, &at, slots, simd, lane, threads);
  for (uint i = tid; i < n; i += threads) {
    const ulong r = mto_pick_rank(mto_pick_key(float(row[i])), i);
    if (r >= tau) ranks[at++] = r;
  }
  for (uint i = count + tid; i < size; i += threads) ranks[i] = 0;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  pick_sort(ranks, size, 2u, tid, threads);
}

template <typename T>
[[max_total_threads_per_threadgroup(PICK_MAX_THREADS)]] [[kernel]] void pick_argmax(
    device const T* x [[buffer(PICK_BUFFER_X)]],
    device int* ids [[buffer(PICK_BUFFER_IDS)]],
    constant PickKernelParams& p [[buffer(PICK_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup ulong slots[PICK_MAX_THREADS / 32];
  const uint n = uint(p.cols);
  ulong best[1];
  uint bad;
  pick_scan<T, 1>(x + ulong(row) * n, n, tid, threads, best, &bad);
  const ulong top = pick_group_max_rank(best[0], slots, simd, lane, threads);
  if (tid == 0) ids[row] = int(mto_pick_rank_index(top));
}

template <typename T>
[[max_total_threads_per_threadgroup(PICK_MAX_THREADS)]] [[kernel]] void pick_topk(
    device const T* x [[buffer(PICK_BUFFER_X)]],
    device int* ids [[buffer(PICK_BUFFER_IDS)]],
    device T* values [[buffer(PICK_BUFFER_VALUES)]],
    constant PickKernelParams& p [[buffer(PICK_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup ulong ranks[PICK_MAX_THREADS * PICK_KEEP];
  threadgroup ulong slots[PICK_MAX_THREADS / 32];
  const uint n = uint(p.cols), k = uint(p.k);
  device const T* xr = x + ulong(row) * n;
  ulong best[PICK_KEEP];
  uint bad;
  pick_scan<T, PICK_KEEP>(xr, n, tid, threads, best, &bad);
  pick_select(xr, n, k, best, ranks, slots, tid, threads, simd, lane);
  for (uint i = tid; i < k; i += threads) {
    const uint index = mto_pick_rank_index(ranks[i]);
    ids[ulong(row) * k + i] = int(index);
    values[ulong(row) * k + i] = xr[index];  // the element as stored: its own bits
  }
}

// sample's start, shared by both sample kernels: a row holding NaN or +inf (the first one is
// reported), or only -inf, has no distribution; temperature 0 takes the best element. Those
// rows are done here (ids and status written): false. Otherwise *m is the row's largest value
// and *bits the row's random bits (shaders/pick_sample.h). best and bad: this thread's
// pick_scan results.
template <typename T>
inline bool pick_sample_begin(device const T* xr, device int* ids, device int* status, constant PickKernelParams& p,
                              uint row, ulong best, uint bad, threadgroup ulong* slots, uint tid, uint threads,
                              ushort simd, ushort lane, thread float* m, thread ulong* bits) {
  bad = pick_group_min(bad, slots, simd, lane, threads);
  if (bad != 0xFFFFFFFFu) {
    if (tid == 0) {
      ids[row] = 0;
      status[2 * row] = mto_pick_key(float(xr[bad])) == MTO_PICK_KEY_NAN ? PICK_STATUS_NAN : PICK_STATUS_POS_INF;
      status[2 * row + 1] = int(bad);
    }
    return false;
  }
  const ulong top = pick_group_max_rank(best, slots, simd, lane, threads);
  if (p.mode == PICK_SAMPLE_ARGMAX) {
    if (tid == 0) {
      ids[row] = int(mto_pick_rank_index(top));
      status[2 * row] = PICK_STATUS_OK;
      status[2 * row + 1] = 0;
    }
    return false;
  }
  if (mto_pick_rank_key(top) == MTO_PICK_KEY_NEG_INF) {
    if (tid == 0) {
      ids[row] = 0;
      status[2 * row] = PICK_STATUS_ALL_NEG_INF;
      status[2 * row + 1] = 0;
    }
    return false;
  }
  *m = float(xr[mto_pick_rank_index(top)]);
  *bits = mto_sample_bits((ulong(uint(p.seed_hi)) << 32) | ulong(uint(p.seed_lo)), ulong(row));
  return true;
}

template <typename T>
[[max_total_threads_per_threadgroup(PICK_MAX_THREADS)]] [[kernel]] void pick_sample(
    device const T* x [[buffer(PICK_BUFFER_X)]],
    device int* ids [[buffer(PICK_BUFFER_IDS)]],
    device int* status [[buffer(PICK_BUFFER_STATUS)]],
    constant PickKernelParams& p [[buffer(PICK_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup ulong ranks[PICK_MAX_THREADS * PICK_KEEP];
  threadgroup ulong slots[PICK_MAX_THREADS / 32];
  threadgroup ulong weights[PICK_MAX_K];
  const uint n = uint(p.cols);
  device const T* xr = x + ulong(row) * n;
  ulong best[PICK_KEEP];
  uint bad;
  pick_scan<T, PICK_KEEP>(xr, n, tid, threads, best, &bad);
  float m;
  ulong bits;
  if (!pick_sample_begin(xr, ids, status, p, row, best[0], bad, slots, tid, threads, simd, lane, &m, &bits)) return;
  const float c = as_type<float>(uint(p.scale_bits));

  if (p.mode == PICK_SAMPLE_RANKED) {
    const uint k = uint(p.k);
    pick_select(xr, n, k, best, ranks, slots, tid, threads, simd, lane);
    for (uint i = tid; i < k; i += threads) weights[i] = mto_sample_weight(float(xr[mto_pick_rank_index(ranks[i])]), m, c);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    // At most PICK_MAX_K candidates: one thread walks them in rank order, as the cpu does.
    if (tid == 0) {
      ulong total = 0;
      for (uint i = 0; i < k; ++i) total += weights[i];
      uint keep = k;
      if (p.has_top_p != 0) {
        const ulong top_p = (ulong(uint(p.top_p_hi)) << 32) | ulong(uint(p.top_p_lo));
        ulong cum = 0;
        for (uint i = 0; i < k; ++i) {
          cum += weights[i];
          if (mto_sample_reaches(cum, total, top_p)) {
            keep = i + 1u;
            break;
          }
        }
      }
      ulong kept = 0;
      for (uint i = 0; i < keep; ++i) kept += weights[i];
      const ulong target = mto_sample_target(bits, kept);
      ulong cum = 0;
      uint pick = 0;
      for (uint i = 0; i < keep; ++i) {
        cum += weights[i];
        if (target < cum) {
          pick = i;
          break;
        }
      }
      ids[row] = int(mto_pick_rank_index(ranks[pick]));
      status[2 * row] = PICK_STATUS_OK;
      status[2 * row + 1] = 0;
    }
    return;
  }

  // Index order: the range holding the draw narrows `groups`-fold a step (16 for 512 threads).
  // SIMD-group s weighs part s of the range (coalesced, 32 elements a step), every thread finds
  // the part where the draw falls from the part sums, and the range becomes that part. The first
  // step's parts give the total, and with it the draw: about n / threads * 16/15 weights per
  // thread in all. The last range (32 elements, or a short row of a one-SIMD-group threadgroup)
  // is walked by SIMD-group 0, 32 elements at a time, with an inclusive prefix sum.
  const uint groups = threads / 32u;
  uint lo = 0, hi = n;
  ulong base = 0, target = 0;  // the weight before lo; the draw's position in the row's total
  bool narrowed = false;
  while (groups > 1u && hi - lo > 32u) {
    const uint part = ((hi - lo + groups - 1u) / groups + 31u) & ~31u;
    const uint start = min(lo + uint(simd) * part, hi), end = min(start + part, hi);
    ulong sum = 0;
    for (uint i = start + lane; i < end; i += 32u) sum += mto_sample_weight(float(xr[i]), m, c);
    sum = pick_simd_sum_u64(sum);
    if (lane == 0) ranks[simd] = sum;  // the candidate buffer is free in this mode
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (!narrowed) {
      ulong total = 0;
      for (uint s = 0; s < groups; ++s) total += ranks[s];
      target = mto_sample_target(bits, total);
    }
    uint pick = groups - 1u;
    for (uint s = 0; s < groups; ++s) {
      if (target < base + ranks[s]) {
        pick = s;
        break;
      }
      base += ranks[s];
    }
    lo = min(lo + pick * part, hi);
    hi = min(lo + part, hi);
    narrowed = true;
    threadgroup_barrier(mem_flags::mem_threadgroup);  // the part sums are read before the next step writes
  }
  if (simd == 0) {
    if (!narrowed) {
      ulong total = 0;
      for (uint i = lo + lane; i < hi; i += 32u) total += mto_sample_weight(float(xr[i]), m, c);
      target = mto_sample_target(bits, pick_simd_sum_u64(total));
    }
    for (uint b = lo; b < hi; b += 32u) {
      const uint i = b + lane;
      const ulong w = i < hi ? mto_sample_weight(float(xr[i]), m, c) : 0ul;
      const ulong upto = base + pick_simd_prefix_u64(w, lane);
      const uint found = simd_min(target < upto ? uint(lane) : 32u);
      if (found < 32u) {
        if (uint(lane) == found) ids[row] = int(i);
        break;
      }
      base = pick_simd_broadcast_u64(upto, 31);
    }
    if (lane == 0) {
      status[2 * row] = PICK_STATUS_OK;
      status[2 * row + 1] = 0;
    }
  }
}

// The rank of the row's k-th element (k < n) for the wide kernels: a walk for its key, then its
// place among that key's elements.
template <typename T>
inline ulong pick_kth_rank(device const T* row, uint n, uint k, threadgroup ulong* slots, threadgroup uint* part_c,
                           threadgroup ulong* part_w, threadgroup uint* found, uint tid, uint threads, ushort simd,
                           ushort lane) {
  PickWalk kth = {};
  kth.mode = PICK_WALK_COUNT;
  kth.k = k;
  pick_walk(row, n, 0ul, 0.0f, 0.0f, kth, part_c, part_w, tid, threads, simd, lane);
  // count_above elements have larger keys; the rest are the first `need` of the k-th's key.
  const uint need = k - kth.count_above;
  return mto_pick_rank(kth.key, pick_nth_of_key(row, n, kth.key, need, slots, found, tid, threads, simd, lane));
}

// topK of any k (plan: above PICK_MAX_K, or more than the threads keep): the k-th element by a
// radix walk, the elements ranked at or above it gathered in index order into ids, then sorted
// there by key (stable: ties stay in index order), scratch the sort's second buffer.
template <typename T>
[[max_total_threads_per_threadgroup(PICK_WIDE_MAX_THREADS)]] [[kernel]] void pick_topk_wide(
    device const T* x [[buffer(PICK_BUFFER_X)]],
    device int* ids [[buffer(PICK_BUFFER_IDS)]],
    device T* values [[buffer(PICK_BUFFER_VALUES)]],
    constant PickKernelParams& p [[buffer(PICK_BUFFER_PARAMS)]],
    device int* scratch [[buffer(PICK_BUFFER_SCRATCH)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup ulong slots[PICK_WIDE_SIMDS];
  threadgroup uint part_c[PICK_BINS * PICK_WIDE_SIMDS];
  threadgroup ulong part_w[PICK_BINS * PICK_WIDE_SIMDS];
  threadgroup uint found[1];
  const uint n = uint(p.cols), k = uint(p.k);
  device const T* xr = x + ulong(row) * n;
  device int* out = ids + ulong(row) * k;
  // Every element ranked >= the k-th's belongs.
  const ulong least = k < n ? pick_kth_rank(xr, n, k, slots, part_c, part_w, found, tid, threads, simd, lane) : 0ul;
  pick_compact(xr, n, least, out, slots, tid, threads, simd, lane);
  device int* cur = out;
  device int* spare = scratch + ulong(row) * k;
  for (uint shift = 0; shift < 32u; shift += 4u) {
    if (pick_sort_pass(xr, cur, spare, k, shift, part_c, tid, threads, simd, lane)) {
      device int* t = cur;
      cur = spare;
      spare = t;
    }
  }
  for (uint i = tid; i < k; i += threads) {
    const int index = cur[i];
    out[i] = index;  // from the scratch after an odd number of passes
    values[ulong(row) * k + i] = xr[index];  // the element as stored: its own bits
  }
}

// sample's ranked mode over more candidates than pick_sample sorts: the k best (a walk for the
// k-th, when k < cols), topP's cut (a walk, then the fewest elements of the cut's key that
// reach), the draw (a walk, then the element of the draw's key it falls on). The cpu's
// candidates in rank order, cut and draw, without a sort.
template <typename T>
[[max_total_threads_per_threadgroup(PICK_WIDE_MAX_THREADS)]] [[kernel]] void pick_sample_wide(
    device const T* x [[buffer(PICK_BUFFER_X)]],
    device int* ids [[buffer(PICK_BUFFER_IDS)]],
    device int* status [[buffer(PICK_BUFFER_STATUS)]],
    constant PickKernelParams& p [[buffer(PICK_BUFFER_PARAMS)]],
    uint row [[threadgroup_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]],
    uint threads [[threads_per_threadgroup]],
    ushort simd [[simdgroup_index_in_threadgroup]],
    ushort lane [[thread_index_in_simdgroup]]) {
  threadgroup ulong slots[PICK_WIDE_SIMDS];
  threadgroup uint part_c[PICK_BINS * PICK_WIDE_SIMDS];
  threadgroup ulong part_w[PICK_BINS * PICK_WIDE_SIMDS];
  threadgroup uint found[1];
  const uint n = uint(p.cols), k = uint(p.k);
  device const T* xr = x + ulong(row) * n;
  ulong best[1];
  uint bad;
  pick_scan<T, 1>(xr, n, tid, threads, best, &bad);
  float m;
  ulong bits;
  if (!pick_sample_begin(xr, ids, status, p, row, best[0], bad, slots, tid, threads, simd, lane, &m, &bits)) return;
  const float c = as_type<float>(uint(p.scale_bits));

  // The candidates: the elements ranked >= least (the k-th's rank, or the whole row).
  ulong least = k < n ? pick_kth_rank(xr, n, k, slots, part_c, part_w, found, tid, threads, simd, lane) : 0ul;
  PickWalk draw = {};
  draw.mode = PICK_WALK_DRAW;
  draw.bits = bits;
  if (p.has_top_p != 0) {
    PickWalk cut = {};
    cut.mode = PICK_WALK_TOP_P;
    cut.top_p = (ulong(uint(p.top_p_hi)) << 32) | ulong(uint(p.top_p_lo));
    pick_walk(xr, n, least, m, c, cut, part_c, part_w, tid, threads, simd, lane);
    // The cut key's elements weigh the same: the fewest of them (1 to count_at, by bisection)
    // whose weight reaches, as the cpu's walk over the sorted candidates stops.
    const ulong each = cut.weight_at / ulong(cut.count_at);
    uint lo = 1, hi = cut.count_at;
    while (lo < hi) {
      const uint mid = lo + (hi - lo) / 2u;
      if (mto_sample_reaches(cut.weight_above + ulong(mid) * each, cut.total, cut.top_p)) {
        hi = mid;
      } else {
        lo = mid + 1u;
      }
    }
    // The draw's candidates are then those the cut keeps: its walk's total is theirs,
    // cut.weight_above + lo * each.
    least = mto_pick_rank(cut.key, pick_nth_of_key(xr, n, cut.key, lo, slots, found, tid, threads, simd, lane));
  }
  pick_walk(xr, n, least, m, c, draw, part_c, part_w, tid, threads, simd, lane);
  // The draw falls on the j-th element of its key: the cpu's first candidate whose running
  // weight passes the target.
  const ulong each = draw.weight_at / ulong(draw.count_at);
  const uint j = uint((draw.target - draw.weight_above) / each) + 1u;
  const uint id = pick_nth_of_key(xr, n, draw.key, j, slots, found, tid, threads, simd, lane);
  if (tid == 0) {
    ids[row] = int(id);
    status[2 * row] = PICK_STATUS_OK;
    status[2 * row + 1] = 0;
  }
}

// Host names: pick_{argmax,topk,sample,topk_wide,sample_wide}_<x dtype>.
#define MTO_PICK_DTYPE(T, tname)                                        \
  MTO_KERNEL_INSTANCE("pick_argmax_" tname, pick_argmax, T)            \
  MTO_KERNEL_INSTANCE("pick_topk_" tname, pick_topk, T)                \
  MTO_KERNEL_INSTANCE("pick_sample_" tname, pick_sample, T)            \
  MTO_KERNEL_INSTANCE("pick_topk_wide_" tname, pick_topk_wide, T)      \
  MTO_KERNEL_INSTANCE("pick_sample_wide_" tname, pick_sample_wide, T)

MTO_PICK_DTYPE(float, "f32")
MTO_PICK_DTYPE(half, "f16")
MTO_PICK_DTYPE(bfloat, "bf16")
