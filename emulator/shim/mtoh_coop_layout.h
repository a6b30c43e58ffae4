// The element-to-thread layouts of the harness's cooperative tensors (<metal_tensor>,
// mtoh_tensor.h): which element each slot of each thread holds, made from the seed
// (MTOH_COOP_SEED) and, in the reverse pass, laid out in row blocks (::mtoh::coop_row_blocks).
// Included by mtoh_tensor.h after the scopes and the harness controls it uses.
#pragma once
#pragma clang system_header

namespace mtoh::tops {

// ---- Layout tables: slot t * cap + i of thread t holds element slot[...] (-1: invalid).

struct Table {
  int threads = 0, cap = 0, elems = 0, rows = 0, cols = 0;
  std::vector<int> slot;
};

struct Rng {
  uint64_t s;
  uint64_t next() {
    s ^= s >> 12;
    s ^= s << 25;
    s ^= s >> 27;
    return s * 0x2545F4914F6CDD1Dull;
  }
  int below(int n) { return int(next() % uint64_t(n)); }
};

// salt distinguishes layouts that must not coincide (a left input that is not compatible).
// Scattered: the elements in a random permutation of all slots. Row blocks: thread t holds the
// elements [t * per, (t + 1) * per) in row-major order (a row in one or two threads), its slots in
// random order. Either way at least one invalid slot somewhere in each thread's range.
inline Table make_matrix_table(int rows, int cols, int threads, uint64_t salt, bool row_blocks) {
  Table t;
  t.threads = threads;
  t.rows = rows;
  t.cols = cols;
  t.elems = rows * cols;
  const int per = (t.elems + threads - 1) / threads;
  t.cap = per + 1;
  const int slots = t.cap * threads;
  t.slot.resize(size_t(slots));
  const uint64_t h = mix(mix(mix(mix(coop_seed(), salt), uint64_t(rows)), uint64_t(cols)), uint64_t(threads));
  Rng rng{(row_blocks ? mix(h, 1) : h) | 1};
  if (!row_blocks) {
    for (int i = 0; i < slots; ++i) t.slot[size_t(i)] = i < t.elems ? i : -1;
    for (int i = slots - 1; i > 0; --i) std::swap(t.slot[size_t(i)], t.slot[size_t(rng.below(i + 1))]);
    return t;
  }
  for (int th = 0; th < threads; ++th) {
    int* s = &t.slot[size_t(th * t.cap)];
    for (int i = 0; i < t.cap; ++i) s[i] = i < per && th * per + i < t.elems ? th * per + i : -1;
    for (int i = t.cap - 1; i > 0; --i) std::swap(s[i], s[rng.below(i + 1)]);
  }
  return t;
}

// In each thread, the rows its elements of `m` touch, in scrambled order, plus invalid slots.
inline Table make_row_table(const Table& m) {
  Table t;
  t.threads = m.threads;
  t.rows = m.rows;
  t.cols = 1;
  t.elems = m.rows;
  std::vector<std::vector<int>> per(size_t(m.threads));
  int most = 0;
  for (int th = 0; th < m.threads; ++th) {
    std::vector<char> seen(size_t(m.rows), 0);
    for (int i = 0; i < m.cap; ++i) {
      const int e = m.slot[size_t(th * m.cap + i)];
      if (e >= 0 && !seen[size_t(e / m.cols)]) {
        seen[size_t(e / m.cols)] = 1;
        per[size_t(th)].push_back(e / m.cols);
      }
    }
    most = std::max(most, int(per[size_t(th)].size()));
  }
  t.cap = most + 1;
  t.slot.assign(size_t(t.cap * t.threads), -1);
  Rng rng{mix(coop_seed(), 0xA11CEull + uint64_t(m.rows) * 131 + uint64_t(m.cols)) | 1};
  for (int th = 0; th < m.threads; ++th) {
    int* s = &t.slot[size_t(th * t.cap)];
    for (size_t i = 0; i < per[size_t(th)].size(); ++i) s[i] = per[size_t(th)][i];
    for (int i = t.cap - 1; i > 0; --i) std::swap(s[i], s[rng.below(i + 1)]);
  }
  return t;
}

enum : uint64_t { kSaltDest = 0xD357, kSaltLeft = 0x1EF7 };

// The launch's layout (::mtoh::coop_row_blocks): each made once, on first use.
template <int Rows, int Cols, int T, uint64_t Salt>
const Table& matrix_table() {
  if (::mtoh::coop_row_blocks()) {
    static const Table blocks = make_matrix_table(Rows, Cols, T, Salt, true);
    return blocks;
  }
  static const Table scattered = make_matrix_table(Rows, Cols, T, Salt, false);
  return scattered;
}
template <int Rows, int Cols, int T>
const Table& row_table() {
  if (::mtoh::coop_row_blocks()) {
    static const Table blocks = make_row_table(make_matrix_table(Rows, Cols, T, kSaltDest, true));
    return blocks;
  }
  static const Table scattered = make_row_table(make_matrix_table(Rows, Cols, T, kSaltDest, false));
  return scattered;
}

// Layout kinds of cooperative tensors (the third template argument of metal::cooperative_tensor).
template <int Rows, int Cols, class Scope>
struct dest_layout {
  static constexpr int rows = Rows, cols = Cols, rank = 2, threads = scope_traits<Scope>::threads;
  static constexpr int max_cap = (Rows * Cols + threads - 1) / threads + 1;
  using scope = Scope;
  static const Table& table() { return matrix_table<Rows, Cols, threads, kSaltDest>(); }
};
// Left input of a matmul2d (m x k). Laid out like a destination of the same shape when the
// harness says the two are compatible, differently otherwise.
template <int Rows, int Cols, class Scope>
struct left_layout {
  static constexpr int rows = Rows, cols = Cols, rank = 2, threads = scope_traits<Scope>::threads;
  static constexpr int max_cap = (Rows * Cols + threads - 1) / threads + 1;
  using scope = Scope;
  static const Table& table() {
    return left_input_compatible() ? matrix_table<Rows, Cols, threads, kSaltDest>()
                                   : matrix_table<Rows, Cols, threads, kSaltLeft>();
  }
};
template <int Rows, int Cols, class Scope>
struct row_layout {
  static constexpr int rows = Rows, cols = Cols, rank = 1, threads = scope_traits<Scope>::threads;
  static constexpr int dest_cap = (Rows * Cols + threads - 1) / threads + 1;
  static constexpr int max_cap = (Rows < dest_cap ? Rows : dest_cap) + 1;
  using scope = Scope;
  static const Table& table() { return row_table<Rows, Cols, threads>(); }
};

}  // namespace mtoh::tops
