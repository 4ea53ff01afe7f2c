// The row math of every plan but the streamed split_row (softmax_split_row_stream_sm90a.cu uses only
// Tile from here, and RowExp from softmax_reduce.cuh): softmax forward/backward over one segment [begin, end) of a row, done by `lanes`
// threads (a warp, a block, ...). Plans differ in how big the segment is, how many threads share it,
// (block_online) the L2 hints and the Scope that reduces the statistics across the row:
//   Scope::reduce(MaxSum) -> the row's (max, sum);  Scope::reduce(float) -> the row's sum.
//
// Tiling: a tile is lanes * kVecs 16-byte units; thread `lane` owns units k * lanes + lane
// (k < kVecs), so a warp's loads are contiguous. When the segment is a single tile it stays in
// registers across the reduction and DRAM sees one read + one write. Longer segments are read
// twice (statistics pass, then the output pass), the second read hopefully from L1/L2.
// Misaligned rows (odd row lengths, storage offsets): tiles start at the 16-byte boundary of the
// first input at or below `begin`, the elements before `begin` masked, so every whole unit of
// that input is still one 16-byte access; the other operands take 16-byte accesses when they sit
// at the same offset from a 16-byte boundary (the usual case for tensors of one shape), element
// accesses otherwise.
#pragma once
#include <algorithm>
#include <limits>
#include <type_traits>

#include "softmax/softmax_reduce.cuh"

namespace cp::softmax_detail {

template <typename T, int kVecs>
struct Tile {
  static constexpr int W = vec_width<T>();
  // The raw 16-byte units, converted to fp32 at each use: a 16-bit tile waits for the row
  // reduction in half the registers of its fp32 values.
  Vec<T> u[kVecs];

  __device__ __forceinline__ float at(int k, int j) const { return unpack(u[k], j); }
  // at(), for the pass after a row reduction (unpack_late says why).
  __device__ __forceinline__ float at_late(int k, int j) const { return unpack_late(u[k], j); }

  // Only a thread's first unit can start before `begin` (tiles start at most W - 1 elements
  // early); later units get no lower bound, which the compiler folds away.
  static __device__ __forceinline__ std::int64_t unit_lo(int k, std::int64_t lo) {
    return k == 0 ? lo : std::numeric_limits<std::int64_t>::min();
  }

  // max(m, every value of the tile), NaN-propagating; 16-bit pairs compared packed, unconverted.
  __device__ __forceinline__ float max(float m) const {
    if constexpr (W == 4) {
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int j = 0; j < W; ++j) m = nan_max(m, at(k, j));
      return m;
    } else {
      std::uint32_t w = u[0].w[0];
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int q = k == 0 ? 1 : 0; q < 4; ++q) w = max_word<T>(w, u[k].w[q]);
      Vec<T> last{};
      last.w[0] = w;
      return nan_max(nan_max(m, unpack(last, 0)), unpack(last, 1));
    }
  }

  // sum of exp(value - m) over the tile.
  __device__ __forceinline__ float sum_exp(float m) const {
    return RowExp<T>(m, 1.0f).apply([&](const auto& exp) {
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int j = 0; j < W; ++j) s += exp(at(k, j));
      return s;
    });
  }

  // Units of the tile at tile_begin; elements outside [begin, end) read as `fill`. `vectors`:
  // row + tile_begin is 16-byte aligned, so every whole unit is one 16-byte access.
  template <L2Hint H = L2Hint::Normal>
  __device__ __forceinline__ void load(const T* __restrict__ row, std::int64_t tile_begin, std::int64_t begin,
                                       std::int64_t end, int lane, int lanes, bool vectors, float fill) {
    // Offsets relative to this thread's first unit: one 64-bit base, small per-unit steps.
    const std::int64_t first = tile_begin + static_cast<std::int64_t>(lane) * W;
    const std::int64_t step = static_cast<std::int64_t>(lanes) * W;
    const std::int64_t lo = begin - first, hi = end - first;
    // The common case: each unit lies whole inside [begin, end) or wholly past `end`; the loads
    // are then predicated, independent and all in flight at once. Only a thread holding a
    // ragged unit (a row's misaligned start or its last partial unit) takes the per-unit path.
    // Its branches join every unit's 16-byte and element loads, and in 16-bit kernels the
    // compiler gave all the 16-byte loads one destination, so each waited for the one before
    // (the SASS of every 16-bit plan did that for every unit before this fast path existed;
    // docs/perf-log.md).
    bool whole_units = vectors && lo <= 0;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) whole_units = whole_units && (k * step + W <= hi || k * step >= hi);
    if (whole_units) {
      const T filler = from_float<T>(fill);
      const Vec<T> padding = make_vec<T>([&](int) { return filler; });
#pragma unroll
      for (int k = 0; k < kVecs; ++k) u[k] = load_unit_or<T, H>(row + first + k * step, k * step + W <= hi, padding);
      return;
    }
#pragma unroll
    for (int k = 0; k < kVecs; ++k) u[k] = load_vec<T, H>(row + first, k * step, unit_lo(k, lo), hi, vectors, fill);
  }

  // The units whose offsets from tile_begin lie in [lo, hi) (both multiples of W, so each unit is
  // wholly in or out) as one 16-byte load each, all in flight at once; the others read as `fill`.
  // Every lane runs the same predicated code, whatever the row's phase (SegmentEdges).
  __device__ __forceinline__ void load_units(const T* __restrict__ row, std::int64_t tile_begin, std::int64_t lo,
                                             std::int64_t hi, int lane, int lanes, float fill) {
    const std::int64_t own = static_cast<std::int64_t>(lane) * W;
    const std::int64_t step = static_cast<std::int64_t>(lanes) * W;
    const T filler = from_float<T>(fill);
    const Vec<T> padding = make_vec<T>([&](int) { return filler; });
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      const std::int64_t at = own + k * step;
      u[k] = load_unit_or<T>(row + tile_begin + at, at >= lo && at < hi, padding);
    }
  }

  // Writes value(k, j) over the units load_units() reads: 16-byte stores when `vectors` (the
  // output sits at the input's phase), element stores otherwise.
  template <typename F>
  static __device__ __forceinline__ void store_units(T* __restrict__ row, std::int64_t tile_begin, std::int64_t lo,
                                                     std::int64_t hi, int lane, int lanes, bool vectors, F value) {
    const std::int64_t first = tile_begin + static_cast<std::int64_t>(lane) * W;
    const std::int64_t step = static_cast<std::int64_t>(lanes) * W;
    const std::int64_t own_lo = lo - (first - tile_begin), own_hi = hi - (first - tile_begin);
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      if (k * step < own_lo || k * step >= own_hi) continue;
      float out[W];
#pragma unroll
      for (int j = 0; j < W; ++j) out[j] = value(k, j);
      store_vec<T>(row + first, k * step, own_lo, own_hi, vectors, out);
    }
  }

  // Writes value(k, j) (fp32) for element j of unit k, over the same units load() reads.
  template <L2Hint H = L2Hint::Normal, typename F>
  static __device__ __forceinline__ void store(T* __restrict__ row, std::int64_t tile_begin, std::int64_t begin,
                                               std::int64_t end, int lane, int lanes, bool vectors, F value) {
    const std::int64_t first = tile_begin + static_cast<std::int64_t>(lane) * W;
    const std::int64_t step = static_cast<std::int64_t>(lanes) * W;
#pragma unroll
    for (int k = 0; k < kVecs; ++k) {
      float out[W];
#pragma unroll
      for (int j = 0; j < W; ++j) out[j] = value(k, j);
      store_vec<T, H>(row + first, k * step, unit_lo(k, begin - first), end - first, vectors, out);
    }
  }
};

// Where the tiles of segment [begin, end) of `lead` (the operand that sets the alignment) start:
// `begin` itself when every row is aligned (or the segment is empty), else the 16-byte boundary
// at or below it, so `lead` takes 16-byte accesses on every whole unit.
template <typename T>
__device__ __forceinline__ std::int64_t tile_origin(const T* lead, std::int64_t begin, std::int64_t end, bool aligned) {
  return aligned || end <= begin ? begin : begin - misalignment(lead + begin);
}

// Whether `other` can take 16-byte accesses on the tiles tile_origin() chose for `lead`: always
// when every row is aligned, else when both sit at the same offset from a 16-byte boundary.
template <typename T>
__device__ __forceinline__ bool same_phase(const T* other, const T* lead, std::int64_t begin, bool aligned) {
  return aligned || misalignment(other + begin) == misalignment(lead + begin);
}

// The fewest lanes a Scope reduces over: a block's, whole warps, unless it is a lane group's.
template <typename Scope>
constexpr int kScopeLanes = 32;

// A single-tile segment [begin, end) split at the 16-byte units of its tiles (`origin`:
// tile_origin's): the body [body_lo, body_hi), offsets from origin that are multiples of W, so each
// unit in it is whole (Tile::load_units), and the edges, the fewer than W elements before it (a
// segment that starts inside a unit) and after it (one that ends inside one). Edge slots 0..W-1
// hold the head's elements, W..2W-1 the tail's; lane l holds slots l + i * lanes, one element each.
// So the lane whose unit is ragged runs the same code as the others: when it took a per-element
// path for its units, its warp ran both paths, and the bf16 block_per_row forward read 0.74 of copy
// at 4096x8001 against 0.95 at 4096x8000 (docs/perf-log.md, session 55). kMinLanes: the Scope's
// kScopeLanes.
template <typename T, int kMinLanes>
struct SegmentEdges {
  static constexpr int W = vec_width<T>();
  static constexpr int kSlots = (2 * W + kMinLanes - 1) / kMinLanes;  // per lane
  using Values = float[kSlots];  // a lane's slot values
  int head, tail_end;    // begin and end as offsets from origin (a tile holds fewer than 2^31 elements)
  int body_lo, body_hi;  // the body, the same way

  __device__ __forceinline__ SegmentEdges(std::int64_t origin, std::int64_t begin, std::int64_t end)
      : head(static_cast<int>(begin - origin)), tail_end(static_cast<int>(end - origin)) {
    body_lo = head > 0 ? W : 0;  // origin is the unit boundary at or below begin
    body_hi = std::max(body_lo, tail_end / W * W);
  }

  // The element of this lane's slot i, as an offset from origin, or -1 for none.
  __device__ __forceinline__ int offset(int i, int lane, int lanes) const {
    const int slot = lane + i * lanes;
    const int at = slot < W ? head + slot : body_hi + (slot - W);
    return slot < 2 * W && at < (slot < W ? std::min(tail_end, body_lo) : tail_end) ? at : -1;
  }

  // This lane's slots of the row at `at_origin` (the row's pointer + origin), `fill` where it has none.
  __device__ __forceinline__ void load(const T* __restrict__ at_origin, int lane, int lanes, float fill,
                                       Values& v) const {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int at = offset(i, lane, lanes);
      v[i] = at >= 0 ? to_float(at_origin[at]) : fill;
    }
  }

  // Writes value(i) (fp32) to this lane's slot i of the row at `at_origin`.
  template <typename F>
  __device__ __forceinline__ void store(T* __restrict__ at_origin, int lane, int lanes, F value) const {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int at = offset(i, lane, lanes);
      if (at >= 0) at_origin[at] = from_float<T>(value(i));
    }
  }
};

// SegmentEdges' interface for a segment of whole 16-byte units (it starts on a unit boundary and
// its length is a multiple of W; the host checks, kWholeUnits): no edge slots, the body is the
// segment. The edge slots' split and loads cost the 16-bit warp_per_row forward 2% on such rows
// (bf16 65536x256 0.86 -> 0.88 of copy without them; docs/perf-log.md, "Session 64 on the H200"),
// and their registers made block_per_row's 4-unit 16-bit backward spill (an H100's ncu: 6 local
// requests per warp; docs/perf-log.md, "Session 71").
template <typename T>
struct WholeUnits {
  static constexpr int kSlots = 0;
  using Values = float[1];  // none used (a C++ array has at least one element)
  int body_lo, body_hi;

  __device__ __forceinline__ WholeUnits(std::int64_t origin, std::int64_t begin, std::int64_t end)
      : body_lo(static_cast<int>(begin - origin)), body_hi(static_cast<int>(end - origin)) {}
  __device__ __forceinline__ void load(const T*, int, int, float, Values&) const {}
  template <typename F>
  __device__ __forceinline__ void store(T*, int, int, F) const {}
};

// v, which the compiler can no longer prove equal to anything it holds: what is computed from it
// is computed again rather than kept live (SegmentEdges across a row reduction).
__device__ __forceinline__ std::int64_t opaque(std::int64_t v) {
  asm volatile("" : "+l"(v));
  return v;
}

// L2 hints of the path that reads a segment twice (kHinted: block_online): the first read
// evict_last, the second read and the stores evict-first (softmax_block_online.cu says why).
template <bool kHinted>
struct RereadHints {
  static constexpr L2Hint first = kHinted ? L2Hint::KeepForReread : L2Hint::Normal;
  static constexpr L2Hint second = kHinted ? L2Hint::Streaming : L2Hint::Normal;
};

// y = softmax(x) over the row; this thread's part of [begin, end). kWholeUnits: the caller
// guarantees whole 16-byte units (WholeUnits).
template <typename T, int kVecs, typename Scope, bool kHinted = false, bool kWholeUnits = false>
__device__ __forceinline__ void softmax_segment_forward(const T* __restrict__ x, T* __restrict__ y,
                                                        std::int64_t begin, std::int64_t end, int lane, int lanes,
                                                        bool aligned, Scope& scope) {
  static_assert(kVecs <= kMaxUnitsPerThread, "tile does not fit the register budget");
  constexpr int W = vec_width<T>();
  const std::int64_t tile_elems = static_cast<std::int64_t>(lanes) * kVecs * W;
  aligned = aligned || kWholeUnits;  // known at compile time: no phase arithmetic
  const std::int64_t origin = tile_origin(x, begin, end, aligned);
  const bool y_vectors = same_phase(static_cast<const T*>(y), x, begin, aligned);
  Tile<T, kVecs> t;
  if (end - origin <= tile_elems) {
    // Single tile: one read + one write, the segment's whole units in the tile and the rest in
    // edge slots (SegmentEdges). While the fp32 exponentials fit the value budget they stay in
    // registers, rescaled from this thread's max to the row's by one factor, so each element
    // costs one exp; deeper 16-bit tiles (the portable split_row's, block_online's) recompute them instead.
    using Edges = std::conditional_t<kWholeUnits, WholeUnits<T>, SegmentEdges<T, kScopeLanes<Scope>>>;
    const Edges edges(origin, begin, end);
    t.load_units(x, origin, edges.body_lo, edges.body_hi, lane, lanes, kNegInf);  // exp(-inf padding) = 0
    typename Edges::Values edge_v;
    edges.load(x + origin, lane, lanes, kNegInf, edge_v);
    float m = t.max(kNegInf);
#pragma unroll
    for (int i = 0; i < Edges::kSlots; ++i) m = nan_max(m, edge_v[i]);
    // The split is computed again after the row reduction rather than kept across it: each
    // register held there costs a 16-bit block_per_row tile its residency (56 -> 57 took 384-thread
    // blocks from three per SM to two).
    const auto split_again = [&] { return Edges(opaque(origin), begin, end); };
    if constexpr (kVecs * W <= kMaxValuesPerThread) {
      float e[kVecs][W];
      float s = 0.0f;
#pragma unroll
      for (int k = 0; k < kVecs; ++k)
#pragma unroll
        for (int j = 0; j < W; ++j) s += e[k][j] = exp_shifted(t.at(k, j), m);
#pragma unroll
      for (int i = 0; i < Edges::kSlots; ++i) s += edge_v[i] = exp_shifted(edge_v[i], m);
      const MaxSum row = scope.reduce(MaxSum{m, s});
      const float scale = rescale(m, row.max) / row.sum;
      const Edges again = split_again();
      again.store(y + origin, lane, lanes, [&](int i) { return edge_v[i] * scale; });
      t.store_units(y, origin, again.body_lo, again.body_hi, lane, lanes, y_vectors,
                    [&](int k, int j) { return e[k][j] * scale; });
    } else {
      float s = t.sum_exp(m);
#pragma unroll
      for (int i = 0; i < Edges::kSlots; ++i) s += exp_shifted(edge_v[i], m);
      const MaxSum row = scope.reduce(MaxSum{m, s});
      RowExp<T>(row.max, row.sum).apply([&](const auto& exp) {
        const Edges again = split_again();
        again.store(y + origin, lane, lanes, [&](int i) { return exp(edge_v[i]); });
        t.store_units(y, origin, again.body_lo, again.body_hi, lane, lanes, y_vectors,
                      [&](int k, int j) { return exp(t.at_late(k, j)); });
      });
    }
    return;
  }
  MaxSum part = empty_max_sum();
  using Hints = RereadHints<kHinted>;
  for (std::int64_t t0 = origin; t0 < end; t0 += tile_elems) {
    t.template load<Hints::first>(x, t0, begin, end, lane, lanes, true, kNegInf);
    const float m = t.max(part.max);
    part = {m, part.sum * rescale(part.max, m) + t.sum_exp(m)};
  }
  const MaxSum row = scope.reduce(part);
  const RowExp<T> row_exp(row.max, row.sum);
  for (std::int64_t t0 = origin; t0 < end; t0 += tile_elems) {
    t.template load<Hints::second>(x, t0, begin, end, lane, lanes, true, kNegInf);
    row_exp.apply([&](const auto& exp) {
      t.template store<Hints::second>(y, t0, begin, end, lane, lanes, y_vectors,
                                      [&](int k, int j) { return exp(t.at(k, j)); });
    });
  }
}

// acc + the sum of a[i] * b[i] over two tiles' elements.
template <typename T, int kVecs>
__device__ __forceinline__ float tile_dot(const Tile<T, kVecs>& a, const Tile<T, kVecs>& b, float acc) {
#pragma unroll
  for (int k = 0; k < kVecs; ++k)
#pragma unroll
    for (int j = 0; j < Tile<T, kVecs>::W; ++j) acc = fmaf(a.at(k, j), b.at(k, j), acc);
  return acc;
}

// dx = y * (dy - sum(y * dy)) over the row; this thread's part of [begin, end). kWholeUnits: the caller
// guarantees whole 16-byte units (WholeUnits).
template <typename T, int kVecs, typename Scope, bool kHinted = false, bool kWholeUnits = false>
__device__ __forceinline__ void softmax_segment_backward(const T* __restrict__ y, const T* __restrict__ dy,
                                                         T* __restrict__ dx, std::int64_t begin, std::int64_t end,
                                                         int lane, int lanes, bool aligned, Scope& scope) {
  static_assert(2 * kVecs <= kMaxUnitsPerThread, "tiles do not fit the register budget");
  const std::int64_t tile_elems = static_cast<std::int64_t>(lanes) * kVecs * vec_width<T>();
  aligned = aligned || kWholeUnits;  // known at compile time: no phase arithmetic
  const std::int64_t origin = tile_origin(y, begin, end, aligned);
  const bool dy_vectors = same_phase(dy, y, begin, aligned);
  const bool single_tile = end - origin <= tile_elems;
  using Hints = RereadHints<kHinted>;
  Tile<T, kVecs> ty, tdy;
  // 16-bit single tiles with dy at y's phase: whole units in the tiles, the rest in edge slots, as
  // the forward's single tile (SegmentEdges; the split computed again after the reduction). fp32
  // keeps the per-unit path: its depth-4 block_per_row kernel would go from 55 to 60 registers (a
  // 384-thread block from three per SM to two), and block_online's (kHinted) deep tiles spill.
  if constexpr (sizeof(T) == 2 && !kHinted) {
    if (single_tile && dy_vectors) {
      using Edges = std::conditional_t<kWholeUnits, WholeUnits<T>, SegmentEdges<T, kScopeLanes<Scope>>>;
      const Edges edges(origin, begin, end);
      ty.load_units(y, origin, edges.body_lo, edges.body_hi, lane, lanes, 0.0f);
      tdy.load_units(dy, origin, edges.body_lo, edges.body_hi, lane, lanes, 0.0f);
      typename Edges::Values edge_y, edge_dy;
      edges.load(y + origin, lane, lanes, 0.0f, edge_y);
      edges.load(dy + origin, lane, lanes, 0.0f, edge_dy);
      float dot = tile_dot(ty, tdy, 0.0f);
#pragma unroll
      for (int i = 0; i < Edges::kSlots; ++i) dot = fmaf(edge_y[i], edge_dy[i], dot);
      const float row_dot = scope.reduce(dot);
      const bool dx_vectors = same_phase(static_cast<const T*>(dx), y, begin, aligned);
      const Edges again(opaque(origin), begin, end);
      ty.store_units(dx, origin, again.body_lo, again.body_hi, lane, lanes, dx_vectors,
                     [&](int k, int j) { return ty.at_late(k, j) * (tdy.at_late(k, j) - row_dot); });
      again.store(dx + origin, lane, lanes, [&](int i) { return edge_y[i] * (edge_dy[i] - row_dot); });
      return;
    }
  }
  float dot = 0.0f;
  for (std::int64_t t0 = origin; t0 < end; t0 += tile_elems) {
    ty.template load<Hints::first>(y, t0, begin, end, lane, lanes, true, 0.0f);
    tdy.template load<Hints::first>(dy, t0, begin, end, lane, lanes, dy_vectors, 0.0f);
    dot = tile_dot(ty, tdy, dot);
  }
  const float row_dot = scope.reduce(dot);
  const bool dx_vectors = same_phase(static_cast<const T*>(dx), y, begin, aligned);
  for (std::int64_t t0 = origin; t0 < end; t0 += tile_elems) {
    if (!single_tile) {
      ty.template load<Hints::second>(y, t0, begin, end, lane, lanes, true, 0.0f);
      tdy.template load<Hints::second>(dy, t0, begin, end, lane, lanes, dy_vectors, 0.0f);
    }
    ty.template store<Hints::second>(dx, t0, begin, end, lane, lanes, dx_vectors,
                                     [&](int k, int j) { return ty.at_late(k, j) * (tdy.at_late(k, j) - row_dot); });
  }
}

// Scope for a row owned by an aligned group of kLanes lanes of one warp (kLanes = 32: the warp).
template <int kLanes>
struct LaneGroupScope {
  template <typename V>
  __device__ __forceinline__ V reduce(V v) const {
    return lane_group_reduce<kLanes>(v);
  }
};

template <int kLanes>
constexpr int kScopeLanes<LaneGroupScope<kLanes>> = kLanes;

// Scope for a row owned by one block.
struct BlockScope {
  template <typename V>
  __device__ __forceinline__ V reduce(V v) const {
    return block_reduce(v);
  }
};

}  // namespace cp::softmax_detail

namespace cp::softmax_detail {

// Calls f(std::integral_constant<int, V>{}) for the runtime tile depth vecs in {1, 2, 4, 8},
// instantiating only depths up to kMaxDepth.
template <int kMaxDepth, typename F>
void dispatch_depth(int vecs, F&& f) {
  auto call = [&](auto depth) {
    if constexpr (decltype(depth)::value <= kMaxDepth) f(depth);
  };
  switch (vecs) {
    case 1: call(std::integral_constant<int, 1>{}); break;
    case 2: call(std::integral_constant<int, 2>{}); break;
    case 4: call(std::integral_constant<int, 4>{}); break;
    case 8: call(std::integral_constant<int, 8>{}); break;
  }
}

// dispatch_depth over the depths whose `operands` tiles fit kMaxValuesPerThread.
template <typename T, int kOperands, typename F>
void dispatch_vecs(int vecs, F&& f) {
  dispatch_depth<kMaxValuesPerThread / vec_width<T>() / kOperands>(vecs, f);
}

// Elements a tile must span to hold `cols` consecutive elements of a row: on misaligned rows the
// tiles start up to W - 1 elements early (tile_origin).
template <typename T>
std::int64_t tile_span(std::int64_t cols, bool aligned) {
  return cols + (aligned ? 0 : vec_width<T>() - 1);
}

// The deepest tile (16-byte units per thread, a power of two) whose fp32 values fit the value
// budget: what warp_per_row, block_per_row's forward and cluster_split_row hold.
template <typename T>
constexpr int max_vecs(int operands) {
  return kMaxValuesPerThread / vec_width<T>() / operands;
}

// The deepest tile whose raw units fit the register budget: what the portable split_row, block_online
// and block_per_row's backward hold (twice max_vecs for 16-bit types, the same for fp32).
constexpr int max_units(int operands) { return kMaxUnitsPerThread / operands; }

// Smallest power-of-two depth d <= max_depth with ceil(units / d) <= lanes_target.
inline int tile_depth(std::int64_t units, std::int64_t lanes_target, int max_depth) {
  int d = 1;
  while (d < max_depth && (units + d - 1) / d > lanes_target) d *= 2;
  return d;
}

}  // namespace cp::softmax_detail
