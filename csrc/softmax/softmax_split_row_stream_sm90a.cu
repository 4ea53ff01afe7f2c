// split_row on Hopper, streamed (sm_90a): the split_row plan's kernels when every operand's rows
// sit at the same offset from a 16-byte boundary (any offset: contiguous tensors of one shape do)
// and every row holds at least one whole 16-byte unit; softmax_split_row.cu keeps the portable
// kernels for everything else. A row is a head of up to W - 1 elements before its first 16-byte
// boundary, a body of whole 16-byte units and a tail of up to W - 1 elements (W = 16 bytes of
// elements). Bodies are cut into slices (a launch's last rows may be cut finer: stream_layout), a
// slice is one job, and each job's body is streamed through shared memory: pass 1 folds it into
// statistics (forward: running max and sum; backward: sum of y * dy), the slices of a row exchange
// their statistics through global memory, and pass 2 writes the output. When blocks have few jobs (held_chunks), pass 2
// reads the slice's last chunks from the ring, where pass 1 left them (a whole ring, or 64 KiB per operand), and
// streams only the chunks before them again (from L2); otherwise it streams the whole slice again. The head and
// tail ride with the first and last slice: threads 0-14 load them one element each from global memory before
// the job's pass 1, fold them in with the body and write them after pass 2.
// Plan: a persistent grid, one 544-thread block per SM. Warp 16 is the producer: one thread takes
// job tickets from a global counter in order (row-major over (row, slice)) and, per chunk of each
// operand (32 KiB forward, 16 KiB per operand backward, ending on a 128-byte line of the row: see Span), waits
// for a free stage of a 192 KiB ring of 6 (`empty` mbarrier), arms the stage's
// `full` mbarrier with the byte count and issues 1-D bulk copies of the body (TMA without a tensor
// map; an L2 evict_last policy for the chunks pass 2 reads again, evict_first for the others).
// Each job streams pass 1's chunks, then pass 2's re-reads (ChunkPlan). The producer runs up to a
// whole ring ahead of the consumers, into the next job, so DRAM sees up to 192 KiB per SM in
// flight (the register-tiled kernels issue a tile, then wait for it). Warps 0-15 consume: each
// thread reads 4 units (16 B each) of a forward chunk, 2 per operand backward, from shared memory,
// releases the stage (a proxy fence and an mbarrier arrive per thread: Ring::release) and computes.
// In pass 1 the consumers release only the chunks pass 2 reads again; the held ones (a ring, 64 KiB
// per operand, or none) stay in their stages. Between the passes the job's slices exchange their
// statistics; pass 2 then reads the held chunks first (no wait: they are there) and releases them,
// which lets the producer load the re-read chunks into those stages, then the re-read chunks, and
// stores the output from registers with 16-byte evict-first stores.
// L2: a slice's first (slice - held) bytes are read from DRAM in pass 1 and again in pass 2,
// ideally from L2; the held rest is read once. Session 23 measured why it matters (docs/perf-log.md):
// with the whole slice read twice, bf16 1024x131072 forward read 1.14x the tensor from DRAM (the
// second reads missed L2) and kept L2 84% busy. The slice count keeps the bytes between the two
// reads, about (blocks x slice bytes), under l2_reread_budget_bytes() and slices at most 256 KiB
// (measured best with whole-slice re-reads).
// Slices also fill the grid when rows are fewer than SMs.
// Deadlock freedom: tickets are taken in order by running producers, and a block's consumers work
// through its jobs in ticket order, so the oldest unfinished row has all its slices taken by
// running blocks whose earlier jobs are done or finishable; they all reach its exchange. This
// needs that no block holds two slices of one row: so when rows have several slices, the producer
// takes its next ticket only after its consumers are past the job's exchange (`exchanged`
// mbarrier). Without that wait, on a launch with more jobs than blocks, a slice of at most one ring
// (192 KiB over all operands) lets the producer queue the same row's next slice behind the one whose
// exchange waits for it: a hang (docs/perf-log.md, v13). Slices longer than the ring never reach that
// point before the exchange, so the wait costs them nothing; of the benchmark's slices only the last
// of each fp32 2048x50257 backward row (about 169 KiB) is shorter, and no slice of its row follows it.
// Bound: DRAM bytes, forward 2x and backward 3x the tensor, if pass 2's re-reads hit L2; per row,
// one exchange round trip (while the consumers wait, the ring holds the slice's last chunks or pass
// 2's first ones).
// Workspace: [ticket][exits], then (16-byte aligned) the partials, one 64-bit slot per job (row, slice),
// 0 until the slice publishes (row_total). All of it is zero at launch and the kernel leaves it zero
// (draw_ticket, count_exit and zero_workspace in softmax_reduce.cuh say how and why that is safe): the caller
// zeroes it once, no memset per call. Every producer draws tickets until its first one past the last
// job, so the launch hands out its jobs + gridDim.x tickets and the draw of the last resets the
// counter (each producer has then drawn its end ticket: none draws again). Rows of several slices:
// when a block's producer draws its end ticket, its consumers are past their last exchange, so the
// producer counts the block's exit then (count_exit), while the consumers still write their last
// job; the end marker tells the consumers of the last block out to zero the partials
// (zero_workspace) once that job is written. Nothing on any job's path waits for the reset.
// Single-slice rows touch neither.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "common/cuda_check.h"
#include "common/device.h"
#include "common/dispatch.h"
#include "common/hopper_async.cuh"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cp::softmax_detail {
namespace {

using namespace cp::hopper;

constexpr int kConsumerWarps = 16, kConsumerThreads = 32 * kConsumerWarps;
constexpr int kThreads = kConsumerThreads + 32;  // + the producer warp
// A stage holds one chunk of each operand: forward one 32 KiB chunk, backward two of 16 KiB. Per chunk a
// consumer thread pays a fixed cost (the wait, the release, the chunk's bounds and addresses: about 90
// instructions in the bf16 forward's pass 2 and 67 in pass 1, SASS in docs/perf-log.md, session 33), so the
// forward, whose 16-bit consumers run at about DRAM speed, takes chunks of 4 units per thread instead of 2.
constexpr int kStageBytes = 32768;
constexpr int kRingBytes = 192 * 1024;
constexpr int kStages = kRingBytes / kStageBytes;
// The largest slice worth taking (operand bytes): in the slice-count sweep (perf-log, session 9) the
// best whole-chunk count at 32x1M and 4x4M, fp32 and bf16, both directions, held 256-352 KiB, and 256
// KiB was within 0.02 of the best every time; v13 took up to ~336 KiB (the L2 budget alone).
constexpr double kSliceBytesMost = 256 * 1024;
constexpr int kConsumerBarrier = 1;              // named barrier over the consumer warps
// The layout cuts slices in granules of this many operand bytes (whole granules, unless a row's last slice
// would be empty: stream_layout).
constexpr int kSliceGranuleBytes = 16384;

template <int kOps>
constexpr int chunk_bytes() {  // per operand
  return kStageBytes / kOps;
}
template <int kOps>
constexpr int units_per_thread() {
  static_assert(chunk_bytes<kOps>() % (16 * kConsumerThreads) == 0, "a chunk is whole units per consumer");
  return chunk_bytes<kOps>() / 16 / kConsumerThreads;
}

struct Job {
  std::int64_t row;  // < 0: no more jobs
  int slice, slices;  // this slice of the row's `slices`
  unsigned ticket;    // also the job's slot in the partials: a row's slots are its tickets, in slice order
};

// Rows [0, fine_row) are cut into `slices` slices of slice_units whole 16-byte units of the row's body,
// rows [fine_row, rows) into fine_slices of fine_slice_units: the launch's last jobs can be finer, so
// that blocks run out of jobs closer together (the last round's jobs end up to a job-time apart).
struct StreamProblem {
  std::int64_t rows, cols, slice_units, fine_row, fine_slice_units;
  int slices, fine_slices;
  int held_most;  // chunks a job may keep in the ring for pass 2 (0: pass 2 reads the whole slice again)

  __host__ __device__ std::int64_t jobs() const { return fine_row * slices + (rows - fine_row) * fine_slices; }
  __host__ __device__ bool several_slices() const { return slices > 1 || (fine_row < rows && fine_slices > 1); }
  __device__ __forceinline__ std::int64_t units_of(std::int64_t row) const {
    return row < fine_row ? slice_units : fine_slice_units;
  }
  // Tickets are row-major over (row, slice), the coarse rows first.
  __device__ __forceinline__ Job job(unsigned ticket) const {
    const std::int64_t coarse = fine_row * slices;
    if (ticket < coarse) return {ticket / slices, static_cast<int>(ticket % slices), slices, ticket};
    const std::int64_t t = ticket - coarse;
    return {fine_row + t / fine_slices, static_cast<int>(t % fine_slices), fine_slices, ticket};
  }
};

// A row's 16-byte geometry: `head` elements before its first 16-byte boundary, `units` whole
// 16-byte units (the body, what the bulk copies move), `tail` elements after them, and where the
// body starts within a 128-byte line. Every operand's rows share the first three (the host checks
// that their addresses agree modulo 16); the line offset is the first input's.
struct RowGeometry {
  int head;
  std::int64_t units;
  int tail;
  int body_line_offset;  // bytes, a multiple of 16
};

template <typename T>
__device__ __forceinline__ RowGeometry row_geometry(const T* row, std::int64_t cols) {
  constexpr int W = vec_width<T>();
  const int head = static_cast<int>(std::min<std::int64_t>((W - misalignment(row)) % W, cols));
  const std::int64_t units = (cols - head) / W;
  const int line_offset = static_cast<int>(reinterpret_cast<std::uintptr_t>(row + head) % 128);
  return {head, units, static_cast<int>(cols - head - units * W), line_offset};
}

// The body elements [begin, end) of a job's slice: 16-byte aligned, whole units (never empty: the
// host sizes slices so that the shortest body still gives every slice a unit). Its chunks end on
// 128-byte lines of the row: the first chunk stops short of chunk_bytes by the slice's offset into
// its line (first_end), the others are whole. Hopper's bulk copies from 128-byte aligned global
// addresses run at full rate; from addresses aligned to 16 bytes only, the slice-count sweep
// measured up to 15% less (docs/perf-log.md, v15).
struct Span {
  std::int64_t begin, end, first_end;
};

template <typename T, int kOps>
__device__ __forceinline__ Span slice_body(const Job& j, const StreamProblem& p, const RowGeometry& g) {
  constexpr int W = vec_width<T>();
  const std::int64_t units = p.units_of(j.row);
  const std::int64_t first = j.slice * units, last = std::min(g.units, first + units);
  const int line_offset = static_cast<int>((g.body_line_offset + first * 16) % 128);
  const std::int64_t begin = g.head + first * W;
  return {begin, g.head + last * W, begin + (chunk_bytes<kOps>() - line_offset) / static_cast<int>(sizeof(T))};
}

// A job's chunks, in the order pass 1 reads them: chunk k spans [begin(k), end(k)) of the row. Pass 1
// reads all `count`; the last `held` (at most held_most, at most one ring: the host clamps it) stay in
// the ring for pass 2, and pass 2 streams chunks 0 .. reread - 1 again.
struct ChunkPlan {
  Span body;
  std::int64_t chunk_elems;
  int count, held, reread;

  __device__ __forceinline__ ChunkPlan(const Span& s, std::int64_t elems, int held_most)
      : body(s), chunk_elems(elems) {
    count = s.end <= s.first_end ? 1 : 1 + static_cast<int>((s.end - s.first_end + elems - 1) / elems);
    held = std::min(count, held_most);
    reread = count - held;
  }
  __device__ __forceinline__ std::int64_t begin(int k) const {
    return k == 0 ? body.begin : body.first_end + (k - 1) * chunk_elems;
  }
  __device__ __forceinline__ std::int64_t end(int k) const {
    return std::min(body.end, k == 0 ? body.first_end : begin(k) + chunk_elems);
  }
};

// The ring of one block: stage s holds operand o's chunk at buf + s * kStageBytes + o * chunk_bytes,
// and jobs[s] names the job whose first chunk is in stage s (written before that stage's `full`
// arrive, read by the consumers after their wait on it: the mbarrier orders the two).
template <int kOps>
struct Ring {
  unsigned char* buf;
  std::uint64_t* full;
  std::uint64_t* empty;
  std::uint64_t* exchanged;  // one phase per job of a multi-slice row: its consumers are past the exchange
  Job* jobs;
  int stage = 0;
  unsigned phase = 0, exchanged_phase = 0;

  __device__ __forceinline__ void advance() {
    if (++stage == kStages) stage = 0, phase ^= 1;
  }
  __device__ __forceinline__ const unsigned char* chunk(int at, int op) const {
    return buf + at * kStageBytes + op * chunk_bytes<kOps>();
  }
  __device__ __forceinline__ void wait_full() { mbar_wait(&full[stage], phase); }
  // Every consumer thread arrives once its reads of the stage are in registers. (One arrive per
  // warp after __syncwarp is enough under the PTX memory model, but racecheck does not follow
  // the warp barrier: it reported the stage's reads racing with the next bulk copy.)
  // The reads are generic-proxy loads and the bulk copy that refills the stage writes through the
  // async proxy: without a proxy fence between them the mbarrier does not order the two, and the
  // copy may land before the reads (a write-after-read race; with 24 or 30 consumer warps, 1 and up to
  // 12 of 40 repeated launches differed, and two blocks per SM failed too, docs/perf-log.md, session 21).
  __device__ __forceinline__ void release(int at) {
    fence_async_shared();
    mbar_arrive(&empty[at]);
  }
};

// The producer thread: tickets -> jobs -> bulk copies of each job's chunks, pass 1's then pass 2's
// re-reads (ChunkPlan); a ticket past the last job puts the end marker in the ring.
template <typename T, int kOps>
__device__ void produce(Ring<kOps>& r, const StreamProblem& p, const T* const (&in)[kOps],
                        const std::int64_t (&stride)[kOps], unsigned* workspace) {
  constexpr std::int64_t kChunkElems = chunk_bytes<kOps>() / sizeof(T);
  const std::uint64_t keep = l2_policy_evict_last(), drop = l2_policy_evict_first();
  const unsigned last_ticket = static_cast<unsigned>(p.jobs()) + gridDim.x - 1;  // host-checked: no wrap
  for (;;) {
    const unsigned ticket = draw_ticket(workspace, last_ticket);
    const Job job = ticket < p.jobs() ? p.job(ticket) : Job{p.rows, 0, 1, ticket};
    mbar_wait(&r.empty[r.stage], r.phase ^ 1);
    if (job.row >= p.rows) {
      // The end marker; with several slices per row, past this block's last exchange (the `exchanged`
      // wait below), so its consumers are done with the partials: count the block's exit
      // now, off the consumers' path, and tell them (slice 1) when theirs is the block to zero the workspace.
      r.jobs[r.stage] = Job{-1, p.several_slices() && count_exit(workspace) ? 1 : 0, 1, ticket};
      mbar_arrive(&r.full[r.stage]);
      return;
    }
    r.jobs[r.stage] = job;
    const ChunkPlan plan(slice_body<T, kOps>(job, p, row_geometry(in[0] + job.row * stride[0], p.cols)), kChunkElems,
                         p.held_most);
    // Pass 1 keeps in L2 what pass 2 reads again; pass 2's re-reads and the held chunks are last reads.
    for (int k = 0, n = plan.count + plan.reread; k < n; ++k) {
      const int chunk = k < plan.count ? k : k - plan.count;
      if (k > 0) mbar_wait(&r.empty[r.stage], r.phase ^ 1);
      const std::int64_t c0 = plan.begin(chunk);
      const unsigned bytes = static_cast<unsigned>((plan.end(chunk) - c0) * sizeof(T));
      mbar_arrive_expect_tx(&r.full[r.stage], bytes * kOps);
#pragma unroll
      for (int op = 0; op < kOps; ++op)
        bulk_load(r.buf + r.stage * kStageBytes + op * chunk_bytes<kOps>(), in[op] + job.row * stride[op] + c0, bytes,
                  &r.full[r.stage], k < plan.reread ? keep : drop);
      r.advance();
    }
    if (job.slices > 1) {  // no second slice of this row in the ring before its exchange (deadlock note above)
      mbar_wait(r.exchanged, r.exchanged_phase);
      r.exchanged_phase ^= 1;
    }
  }
}

// A consumer thread's units of operand op's chunk in stage `at` (units t, t + 512, ... of `units`); the
// rest read as `fill`.
template <typename T, int kOps>
__device__ __forceinline__ void read_chunk(const Ring<kOps>& r, int at, int op, int units,
                                           Tile<T, units_per_thread<kOps>()>& tile, const Vec<T>& fill) {
  const unsigned char* c = r.chunk(at, op);
#pragma unroll
  for (int k = 0; k < units_per_thread<kOps>(); ++k) {
    const int u = threadIdx.x + k * kConsumerThreads;
    tile.u[k] = u < units ? *reinterpret_cast<const Vec<T>*>(c + 16 * u) : fill;
  }
}

// Writes value(k, j) (fp32, rounded to T) for element j of this thread's unit k of a chunk at c0 of
// `row`, units past `units` skipped; 16-byte evict-first stores.
template <typename T, int kUnits, typename F>
__device__ __forceinline__ void store_chunk(T* __restrict__ row, std::int64_t c0, int units, F value) {
  constexpr int W = vec_width<T>();
#pragma unroll
  for (int k = 0; k < kUnits; ++k) {
    const int u = threadIdx.x + k * kConsumerThreads;
    float out[W];
#pragma unroll
    for (int j = 0; j < W; ++j) out[j] = value(k, j);
    if (u < units) store_unit<T, L2Hint::Streaming>(row + c0 + static_cast<std::int64_t>(u) * W, round_vec<T>(out));
  }
}

// Every consumer thread returns the consumers' total (same bits in every thread: every warp runs the
// same butterfly over the warps' totals, and combine is commutative bit for bit). A butterfly, not a
// loop over the 16 totals: the row exchange runs two of these back to back while every block of the
// row waits, and a forward combine waits on an exponential (one whole reduction, the chain of 15 among
// it, took 0.77 us a job in the forward: docs/perf-log.md, session 38).
template <typename V>
__device__ __forceinline__ V consumers_reduce(V v) {
  __shared__ V warp_totals[kConsumerWarps];
  v = warp_reduce(v);
  if (threadIdx.x % 32 == 0) warp_totals[threadIdx.x / 32] = v;
  named_barrier(kConsumerBarrier, kConsumerThreads);
  const V total = lane_group_reduce<kConsumerWarps>(warp_totals[threadIdx.x % kConsumerWarps]);
  named_barrier(kConsumerBarrier, kConsumerThreads);  // warp_totals may be rewritten next
  return total;
}

// The row's statistics from this slice's: with one slice, the slice's; else publish it in its slot
// (published_bits: never 0) and read the row's slots, each consumer thread polling its own until it is
// no longer 0, then combine them in a fixed tree (each thread its own slots, then consumers_reduce's
// butterflies), the same in every block of the row, so every block gets the same bits. The poll
// that sees a partial has read it: one L2 round trip, where a row counter and then the partials took
// two (under a full DRAM load the first exchange ended 1.3-2.6 us after the GPU's last pass 1 in the
// forward, 0.5-1.3 us in the backward: docs/perf-log.md, session 38).
template <typename V>
__device__ __forceinline__ V row_total(V v, const Job& job, unsigned long long* slots) {
  v = consumers_reduce(v);
  if (job.slices == 1) return v;
  unsigned long long* row_slots = slots + (job.ticket - job.slice);
  if (threadIdx.x == 0) publish_relaxed_gpu(row_slots + job.slice, published_bits(v));
  V acc = reduce_identity<V>();
  for (int i = threadIdx.x; i < job.slices; i += kConsumerThreads) {
    unsigned long long bits;
    while ((bits = ld_relaxed_gpu(row_slots + i)) == 0) {
    }
    acc = combine(acc, published_value<V>(bits));
  }
  return consumers_reduce(acc);
}

// Barriers and the job ring; thread 0 initialises them. Returns the ring over the dynamic
// shared memory.
template <int kOps>
__device__ __forceinline__ Ring<kOps> make_ring(unsigned char* smem) {
  constexpr int S = kStages;
  __shared__ __align__(8) std::uint64_t full[S], empty[S], exchanged;
  __shared__ Job jobs[S];
  if (threadIdx.x == 0) {
    for (int s = 0; s < S; ++s) {
      mbar_init(&full[s], 1);                 // the producer's arrive (with the byte count)
      mbar_init(&empty[s], kConsumerThreads);  // one arrive per consumer thread
    }
    mbar_init(&exchanged, 1);  // consumer thread 0, past the row's exchange
    mbar_init_fence();
  }
  __syncthreads();
  return Ring<kOps>{smem, full, empty, &exchanged, jobs};
}

// The consumers' walk over the stream produce() writes: per job, pass 1, the row's exchange, then
// pass 2 (ChunkPlan). Math supplies the reads and the math of one chunk: read(ring, stage, units) ->
// chunk, fold(chunk, acc) -> acc (pass 1) and emit(chunk, units, row, c0, total) (pass 2), and the
// same for the row's head and tail elements outside the body (edge_stat, store_edge). Threads 0-14
// load those (load_edge) before the body, so the latency hides behind it, and keep them in
// registers until pass 2 writes them.
template <typename Math, int kOps>
__device__ __forceinline__ void consume(Ring<kOps>& r, const StreamProblem& p, unsigned* workspace,
                                        unsigned long long* slots, const Math& math) {
  using V = typename Math::V;
  constexpr int S = kStages;
  for (;;) {
    r.wait_full();
    const Job job = r.jobs[r.stage];
    if (job.row < 0) {
      if (job.slice == 1)  // no row words (0 rows of them): the slots are their own flags
        zero_workspace(workspace, 0, slots, p.jobs(), threadIdx.x, kConsumerThreads);
      return;
    }
    const ChunkPlan plan(math.body(job, p), Math::kChunkElems, p.held_most);
    const auto units = [&](int k) { return static_cast<int>((plan.end(k) - plan.begin(k)) / Math::W); };
    const auto edge = math.load_edge(job, p);
    V acc = math.identity();
    // Pass 1: every chunk in order; those pass 2 reads again are released, the last `held` stay.
    for (int k = 0; k < plan.count; ++k) {
      if (k > 0) r.wait_full();
      const auto chunk = math.read(r, r.stage, units(k));
      if (k < plan.reread) r.release(r.stage);
      r.advance();
      acc = math.fold(chunk, acc);
    }
    const V total = row_total(combine(acc, math.edge_stat(edge)), job, slots);
    if (job.slices > 1 && threadIdx.x == 0) mbar_arrive(r.exchanged);
    // Pass 2: the held chunks from the stages pass 1 left them in (no wait), then the re-read ones,
    // which the producer loads into the stages the held ones free.
    int held_at = (r.stage + S - plan.held) % S;
    for (int i = 0; i < plan.count; ++i) {
      const bool held = i < plan.held;
      const int k = held ? plan.reread + i : i - plan.held;
      int at = held_at;
      if (held) {
        held_at = held_at + 1 == S ? 0 : held_at + 1;
      } else {
        r.wait_full();
        at = r.stage;
        r.advance();
      }
      const auto chunk = math.read(r, at, units(k));
      r.release(at);
      math.emit(chunk, units(k), job.row, plan.begin(k), total);
    }
    math.store_edge(job, edge, total);
  }
}

// What both directions' math share: the operands, the element type's geometry, a job's body and
// the edge element (head or tail, outside the body) this thread owns, if any.
template <typename T, int kOps>
struct ChunkMath {
  static constexpr int W = vec_width<T>();
  static constexpr std::int64_t kChunkElems = chunk_bytes<kOps>() / sizeof(T);
  const T* in[kOps];
  std::int64_t in_stride[kOps];
  T* out;
  std::int64_t out_stride;

  __device__ __forceinline__ const T* in_row(int op, std::int64_t row) const { return in[op] + row * in_stride[op]; }
  __device__ __forceinline__ Span body(const Job& job, const StreamProblem& p) const {
    return slice_body<T, kOps>(job, p, row_geometry(in_row(0, job.row), p.cols));
  }
  // This thread's element outside the body, with every operand's value: threads 0..W-2 take the
  // head (slice 0), threads 8..8+W-2 the tail (last slice); index -1 for every other thread.
  struct Edge {
    std::int64_t index;
    float v[kOps];
  };
  __device__ __forceinline__ Edge load_edge(const Job& job, const StreamProblem& p) const {
    const RowGeometry g = row_geometry(in_row(0, job.row), p.cols);
    const int t = static_cast<int>(threadIdx.x);
    Edge e{-1, {}};
    if (job.slice == 0 && t < g.head) e.index = t;
    if (job.slice == job.slices - 1 && t >= 8 && t - 8 < g.tail) e.index = g.head + g.units * W + (t - 8);
    if (e.index >= 0)
#pragma unroll
      for (int op = 0; op < kOps; ++op) e.v[op] = to_float(in_row(op, job.row)[e.index]);
    return e;
  }
  __device__ __forceinline__ void store_edge_value(const Job& job, const Edge& e, float value) const {
    if (e.index >= 0) out[job.row * out_stride + e.index] = from_float<T>(value);
  }
};

template <typename T>
struct ForwardMath : ChunkMath<T, 1> {
  using V = MaxSum;

  __device__ __forceinline__ V identity() const { return empty_max_sum(); }
  __device__ __forceinline__ Vec<T> fill() const {
    const T neg_inf = from_float<T>(kNegInf);
    return make_vec<T>([&](int) { return neg_inf; });  // adds exp(-inf) = 0
  }
  using Edge = typename ChunkMath<T, 1>::Edge;
  // (max, sum) of this thread's edge element: (x, 1), or the empty (-inf, 0).
  __device__ __forceinline__ V edge_stat(const Edge& e) const {
    return e.index < 0 || e.v[0] == kNegInf ? identity() : V{e.v[0], 1.0f};
  }
  using Chunk = Tile<T, units_per_thread<1>()>;
  __device__ __forceinline__ Chunk read(const Ring<1>& r, int at, int units) const {
    Chunk t;
    read_chunk(r, at, 0, units, t, fill());
    return t;
  }
  // Running (max, sum) over the chunk.
  __device__ __forceinline__ V fold(const Chunk& t, V part) const {
    const float m = t.max(part.max);
    return {m, part.sum * rescale(part.max, m) + t.sum_exp(m)};
  }
  // y = exp(x - max) / sum over the chunk.
  __device__ __forceinline__ void emit(const Chunk& t, int units, std::int64_t row, std::int64_t c0, const V& total) const {
    RowExp<T>(total.max, total.sum).apply([&](const auto& exp) {
      store_chunk<T, units_per_thread<1>()>(this->out + row * this->out_stride, c0, units,
                                            [&](int k, int j) { return exp(t.at(k, j)); });
    });
  }
  __device__ __forceinline__ void store_edge(const Job& job, const Edge& e, const V& total) const {
    RowExp<T>(total.max, total.sum).apply([&](const auto& exp) { this->store_edge_value(job, e, exp(e.v[0])); });
  }
};

template <typename T>
struct BackwardMath : ChunkMath<T, 2> {
  using V = float;
  static constexpr int W = ChunkMath<T, 2>::W;

  __device__ __forceinline__ V identity() const { return 0.0f; }
  using Edge = typename ChunkMath<T, 2>::Edge;
  // y * dy of this thread's edge element, or 0.
  __device__ __forceinline__ V edge_stat(const Edge& e) const { return e.index < 0 ? 0.0f : e.v[0] * e.v[1]; }
  struct Chunk {
    Tile<T, units_per_thread<2>()> y, dy;
  };
  __device__ __forceinline__ Chunk read(const Ring<2>& r, int at, int units) const {
    Chunk c;
    read_chunk(r, at, 0, units, c.y, Vec<T>{});
    read_chunk(r, at, 1, units, c.dy, Vec<T>{});
    return c;
  }
  // Running sum of y * dy over the chunk.
  __device__ __forceinline__ V fold(const Chunk& c, V dot) const {
#pragma unroll
    for (int k = 0; k < units_per_thread<2>(); ++k)
#pragma unroll
      for (int j = 0; j < W; ++j) dot = fmaf(c.y.at(k, j), c.dy.at(k, j), dot);
    return dot;
  }
  // dx = y * (dy - sum(y * dy)) over the chunk.
  __device__ __forceinline__ void emit(const Chunk& c, int units, std::int64_t row, std::int64_t c0, const V& dot) const {
    store_chunk<T, units_per_thread<2>()>(this->out + row * this->out_stride, c0, units,
                                          [&](int k, int j) { return c.y.at(k, j) * (c.dy.at(k, j) - dot); });
  }
  __device__ __forceinline__ void store_edge(const Job& job, const Edge& e, const V& dot) const {
    this->store_edge_value(job, e, e.v[0] * (e.v[1] - dot));
  }
};

template <typename T>
__global__ __launch_bounds__(kThreads, 1) void softmax_parallel_split_row_stream_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, StreamProblem p,
    unsigned* workspace, unsigned long long* slots) {
  extern __shared__ __align__(128) unsigned char ring_smem[];
  Ring<1> r = make_ring<1>(ring_smem);
  if (threadIdx.x >= kConsumerThreads) {
    if (threadIdx.x == kConsumerThreads) produce<T, 1>(r, p, {x}, {x_stride}, workspace);
    return;
  }
  consume(r, p, workspace, slots, ForwardMath<T>{{{x}, {x_stride}, y, y_stride}});
}

template <typename T>
__global__ __launch_bounds__(kThreads, 1) void softmax_parallel_split_row_stream_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, StreamProblem p, unsigned* workspace, unsigned long long* slots) {
  extern __shared__ __align__(128) unsigned char ring_smem[];
  Ring<2> r = make_ring<2>(ring_smem);
  if (threadIdx.x >= kConsumerThreads) {
    if (threadIdx.x == kConsumerThreads) produce<T, 2>(r, p, {y, dy}, {y_stride, dy_stride}, workspace);
    return;
  }
  consume(r, p, workspace, slots, BackwardMath<T>{{{y, dy}, {y_stride, dy_stride}, dx, dx_stride}});
}

// Workspace layout (header comment): counters_bytes of counters, then the partials at partials_offset.
struct StreamLayout {
  StreamProblem problem;
  int grid;
  std::size_t counters_bytes, partials_offset, total_bytes;
};

// The fewest whole 16-byte units a row of `cols` elements holds, whatever its alignment.
template <typename T>
std::int64_t fewest_units(std::int64_t cols) {
  constexpr int W = vec_width<T>();
  return cols >= W - 1 ? (cols - (W - 1)) / W : 0;
}

// CUDA_PORTFOLIO_SPLIT_ROW_SLICES forces the slice count, for layout sweeps
// (scripts/sweep_split_row_slices.py): "N" cuts N slices of whole 16-byte units, "Nc" about N
// slices of whole granules (kSliceGranuleBytes), as the rule below cuts. Read per call, so one process can sweep.
struct ForcedSlices {
  std::int64_t count = 0;  // 0: not forced
  bool whole_granules = false;
};

ForcedSlices forced_slices() {
  ForcedSlices f;
  if (const char* v = std::getenv("CUDA_PORTFOLIO_SPLIT_ROW_SLICES")) {
    char* end = nullptr;
    f.count = std::strtoll(v, &end, 10);
    f.whole_granules = *end == 'c';
  }
  return f;
}

// The last rows of a launch, cut finer than the others: `rows` rows into about `slices` slices of whole
// granules, or M times the other rows' count ("times"). CUDA_PORTFOLIO_SPLIT_ROW_FINE="R:S" or "R:xM"
// overrides the rule (stream_layout) for sweeps ("0:x1": every row alike); read per call.
struct FineRows {
  std::int64_t rows = 0, slices = 1;
  bool times = false;  // slices is a multiple of the other rows' count
  bool forced = false;
};

FineRows forced_fine_rows() {
  FineRows f;
  if (const char* v = std::getenv("CUDA_PORTFOLIO_SPLIT_ROW_FINE")) {
    f.forced = true;
    char* end = nullptr;
    f.rows = std::strtoll(v, &end, 10);
    if (*end == ':') {
      f.times = end[1] == 'x';
      f.slices = std::strtoll(end + 1 + f.times, nullptr, 10);
    }
  }
  return f;
}

// How many of a job's last chunks stay in the ring for pass 2, by jobs per block. Held chunks are
// read from DRAM once; but the stages they hold are the ones the producer would fill with the next
// job while pass 2 runs, so with many jobs per block each job boundary waits for DRAM. Measured on
// the H200 (session 24, results/h200/experiments/softmax-7ecf602-split-row-held-sweep.txt and
// softmax-30120a6-held-*.json), against none held:
// - at most 4 jobs per block (4x4M, 32x1M, bf16 256x262144 forward): a whole ring held, +1-9%;
//   4 held gained less (bf16 32x1M forward 0.65 -> 0.62 against the whole ring);
// - 4-8 (1024x131072 bf16 forward, 256x262144 fp32 forward and bf16 backward, 32x1M fp32 backward):
//   4 held, +1.1-2.3% in three runs; a whole ring held, -0.8% to +2.4%;
// - more (2048x50257, 1024x131072 fp32): none; 4 held ranged -1.6% to +1.3%, a whole ring -6%.
constexpr std::int64_t kWholeRingJobsPerBlockMost = 4;
constexpr std::int64_t kSomeHeldJobsPerBlockMost = 8;
constexpr int kSomeHeldBytes = 64 * 1024;  // per operand: 4 chunks of 16 KiB when session 24 measured it

// Chunks a job keeps in the ring for pass 2: CUDA_PORTFOLIO_SPLIT_ROW_HELD=N if set (read per call,
// for sweeps; clamped to the ring), else by jobs per block as above.
template <int kOps>
int held_chunks(std::int64_t jobs, std::int64_t grid) {
  const char* v = std::getenv("CUDA_PORTFOLIO_SPLIT_ROW_HELD");
  if (v != nullptr) return std::clamp(std::atoi(v), 0, kStages);
  if (jobs <= kWholeRingJobsPerBlockMost * grid) return kStages;
  return jobs <= kSomeHeldJobsPerBlockMost * grid ? kSomeHeldBytes / chunk_bytes<kOps>() : 0;
}

// One block per SM. Slices: enough that blocks x slice bytes (all operands) fit the L2 re-read budget,
// slices of at most kSliceBytesMost, and at least one job per block when rows are few; slices are
// whole granules (kSliceGranuleBytes: a backward chunk, half a forward one) of a row's body, cut so
// that every row's last slice still holds a unit (rows differ by one unit with their alignment): where
// it would not, the count drops by one and the slices are re-cut in whole units (the loop below), as
// forced counts other than whole granules are.
// 16-bit forward launches of at least kFineLastRoundJobsPerBlockLeast jobs a block end on one round of
// half-size jobs: the last grid / (2 x slices) rows are cut into twice the slices. Jobs are drawn as blocks
// free up, so the last ones end up to a job-time apart (at bf16 256x262144, 512 jobs on 132 blocks, about
// 14 us of a 100 us launch); halving the last round's jobs shortens that tail. The held chunks stay as the
// rule gives them without the finer rows (their extra jobs would take 256x262144 from a whole ring held
// to 2 chunks, which cost more than the finer round gave). Measured on an H100 (docs/perf-log.md, session
// 73), the held chunks pinned: bf16 / fp16 256x262144 +2.3%, bf16 512x262144 +1.6% (66 rows), 1024x131072 +0.7%;
// bf16 128x262144 (about 2 jobs a block) -0.7%; fp32 forward within 0.3% and the backward slower (up to
// -5%), so neither takes it.
constexpr std::int64_t kFineLastRoundJobsPerBlockLeast = 3;

template <typename T, int kOps>
StreamLayout stream_layout(std::int64_t rows, std::int64_t cols, int device, int sm_count) {
  constexpr int W = vec_width<T>();
  constexpr std::int64_t kGranuleUnits = kSliceGranuleBytes / 16;
  const std::int64_t grid = std::max(1, sm_count);
  const double budget = l2_reread_budget_bytes(device) / static_cast<double>(grid);
  const double row_bytes = static_cast<double>(cols) * sizeof(T) * kOps;
  const std::int64_t most = cols / W, fewest = fewest_units<T>(cols);
  const std::int64_t granules = std::max<std::int64_t>(1, (most + kGranuleUnits - 1) / kGranuleUnits);
  const ForcedSlices forced = forced_slices();
  std::int64_t slices = forced.count > 0 ? forced.count
                                         : std::max({static_cast<std::int64_t>(row_bytes / budget) + 1,
                                                     static_cast<std::int64_t>(std::ceil(row_bytes / kSliceBytesMost)),
                                                     (grid + rows - 1) / std::max<std::int64_t>(rows, 1)});
  // {slices, units per slice} for about `count` slices of whole granules, or of whole units
  struct Cut {
    std::int64_t slices, units;
  };
  const auto cut = [&](std::int64_t count, bool whole_granules) {
    count = std::clamp<std::int64_t>(count, 1, std::min(grid, granules));
    Cut c{0, whole_granules ? (granules + count - 1) / count * kGranuleUnits : (most + count - 1) / count};
    c.slices = std::max<std::int64_t>(1, (most + c.units - 1) / c.units);
    while (c.slices > 1 && (c.slices - 1) * c.units >= fewest) {
      --c.slices;
      c.units = (most + c.slices - 1) / c.slices;
    }
    return c;
  };
  const Cut coarse = cut(slices, forced.count == 0 || forced.whole_granules);
  FineRows last = forced_fine_rows();
  if (!last.forced && kOps == 1 && sizeof(T) == 2 && rows * coarse.slices >= kFineLastRoundJobsPerBlockLeast * grid)
    last = {std::max<std::int64_t>(1, grid / (2 * coarse.slices)), 2, true};
  const std::int64_t fine_row = rows - std::clamp<std::int64_t>(last.rows, 0, rows);
  const Cut fine = fine_row < rows ? cut(last.times ? last.slices * coarse.slices : last.slices, true) : coarse;
  StreamLayout l{};
  l.problem = {rows, cols, coarse.units, fine_row, fine.units, static_cast<int>(coarse.slices),
               static_cast<int>(fine.slices), 0};
  // The tickets (jobs + grid) fit 32 bits.
  if (l.problem.jobs() + grid > 0xffffffffLL)
    throw std::invalid_argument("softmax split_row: too many slices or jobs for the streamed kernel's counters");
  l.problem.held_most = held_chunks<kOps>(rows * coarse.slices, grid);  // as without the finer rows: measured so
  l.grid = static_cast<int>(grid);
  l.counters_bytes = sizeof(unsigned) * kWorkspaceHeader;
  l.partials_offset = (l.counters_bytes + 15) / 16 * 16;
  l.total_bytes = l.partials_offset + sizeof(unsigned long long) * static_cast<std::size_t>(l.problem.jobs());
  return l;
}

template <typename Kernel>
void prepare(Kernel kernel, const StreamLayout& l, const LaunchContext& ctx) {
  if (ctx.workspace == nullptr || ctx.workspace_bytes < l.total_bytes)
    throw std::invalid_argument("softmax split_row: workspace of " + std::to_string(ctx.workspace_bytes) +
                                " bytes given, " + std::to_string(l.total_bytes) + " needed");
  CP_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kRingBytes));
  // No memset: the workspace is zero (the caller zeroed it once; every launch leaves it so).
}

unsigned long long* slots_in(const LaunchContext& ctx, const StreamLayout& l) {
  return reinterpret_cast<unsigned long long*>(static_cast<char*>(ctx.workspace) + l.partials_offset);
}

}  // namespace

bool split_row_streams(DType dtype, std::int64_t cols, int device) {
  const ComputeCapability cc = compute_capability(device);
  std::int64_t units = 0;
  CP_DISPATCH_FLOAT_TYPES(dtype, T, { units = fewest_units<T>(cols); })
  return cc.major == 9 && cc.minor == 0 && units >= 1;
}

bool split_row_streams(const RowOperands& op, int device) {
  // Every operand's rows must sit at the same offset from a 16-byte boundary as the first input's,
  // so one row geometry (head, units, tail) holds for all of them.
  const std::int64_t size = static_cast<std::int64_t>(dtype_size(op.dtype));
  const auto phase = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p) % 16; };
  const auto same_phase = [&](const void* p, std::int64_t stride) {
    return phase(p) == phase(op.in0) && (op.rows <= 1 || (stride * size) % 16 == (op.in0_stride * size) % 16);
  };
  return op.rows > 0 && same_phase(op.out, op.out_stride) && (op.in1 == nullptr || same_phase(op.in1, op.in1_stride)) &&
         split_row_streams(op.dtype, op.cols, device);
}

std::size_t split_row_stream_workspace_bytes(DType dtype, std::int64_t rows, std::int64_t cols, int device,
                                             int sm_count) {
  std::size_t bytes = 0;
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    bytes = std::max(stream_layout<T, 1>(rows, cols, device, sm_count).total_bytes,
                     stream_layout<T, 2>(rows, cols, device, sm_count).total_bytes);
  })
  return bytes;
}

std::string split_row_stream_config(DType dtype, std::int64_t rows, std::int64_t cols, bool forward, int device,
                                    int sm_count) {
  StreamLayout l{};
  CP_DISPATCH_FLOAT_TYPES(dtype, T, {
    l = forward ? stream_layout<T, 1>(rows, cols, device, sm_count) : stream_layout<T, 2>(rows, cols, device, sm_count);
  })
  const StreamProblem& p = l.problem;
  const std::string fine = p.fine_row == p.rows ? "" : ", the last " + std::to_string(p.rows - p.fine_row) + " rows " +
      std::to_string(p.fine_slices) + " of " + std::to_string((p.fine_slice_units * 16 + 512) / 1024) + " KiB";
  return "streamed: " + std::to_string(p.slices) + (p.slices == 1 ? " slice" : " slices") + " per row, " +
         std::to_string((p.slice_units * 16 + 512) / 1024) + " KiB each" + fine + ", grid " + std::to_string(l.grid) +
         ", " + std::to_string(p.held_most) + " chunks held";
}

void split_row_stream_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const StreamLayout l = stream_layout<T, 1>(op.rows, op.cols, ctx.device, ctx.sm_count);
    prepare(softmax_parallel_split_row_stream_fwd<T>, l, ctx);
    softmax_parallel_split_row_stream_fwd<T><<<l.grid, kThreads, kRingBytes, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, l.problem,
        static_cast<unsigned*>(ctx.workspace), slots_in(ctx, l));
  })
  CP_CHECK_LAUNCH("softmax_parallel_split_row_stream_fwd");
}

void split_row_stream_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const StreamLayout l = stream_layout<T, 2>(op.rows, op.cols, ctx.device, ctx.sm_count);
    prepare(softmax_parallel_split_row_stream_bwd<T>, l, ctx);
    softmax_parallel_split_row_stream_bwd<T><<<l.grid, kThreads, kRingBytes, ctx.stream>>>(
        static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
        static_cast<T*>(op.out), op.out_stride, l.problem, static_cast<unsigned*>(ctx.workspace),
        slots_in(ctx, l));
  })
  CP_CHECK_LAUNCH("softmax_parallel_split_row_stream_bwd");
}

}  // namespace cp::softmax_detail
