// cluster_split_row (Hopper, sm_90a only): long rows (50K..262K columns and beyond). A row is
// spread over a thread-block cluster of 2, 4 or 8 CTAs on as many SMs; each CTA keeps its slice
// in registers (up to 512-1024 threads x 32 fp32 values), reduces it to partial statistics in
// shared memory, and after one cluster barrier every CTA reads the C partials of its peers
// through distributed shared memory (DSMEM) and combines them in rank order (the same bits in
// every CTA). The slice never leaves the chip: DRAM sees one read + one write, and rows too long
// for one block still leave every SM with several rows' slices in flight.
// Bound: DRAM bytes (forward 2x, backward 3x the tensor) + two cluster barriers per row (the
// second, "peers are done reading my partial", is split arrive/wait around the output writes).
// Slices beyond one tile (rows > 8 x 32768 forward) are streamed twice, the second read from L2.
#include <cooperative_groups.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "common/cuda_check.h"
#include "common/device.h"
#include "common/dispatch.h"
#include "softmax/softmax_plans.h"
#include "softmax/softmax_segment.cuh"

namespace cg = cooperative_groups;

namespace cp::softmax_detail {
namespace {

constexpr int kMaxThreads = 1024;
constexpr int kTargetThreads = 512;
constexpr int kMaxCluster = 8;  // the portable cluster size limit

// Scope of one row slice: block reduction, then the exchange through DSMEM. Call finish() before
// the CTA exits: peers may still be reading its partial.
template <typename V>
struct ClusterScope {
  __device__ V reduce(V v) const {
    __shared__ V block_total, row_total;
    const cg::cluster_group cluster = cg::this_cluster();
    v = block_reduce(v);
    if (threadIdx.x == 0) block_total = v;
    cluster.sync();  // every CTA's block_total is written and visible cluster-wide
    if (threadIdx.x == 0) {
      V acc = reduce_identity<V>();
      for (unsigned r = 0; r < cluster.num_blocks(); ++r) acc = combine(acc, *cluster.map_shared_rank(&block_total, r));
      row_total = acc;
    }
    cluster.barrier_arrive();  // this CTA is done reading its peers' shared memory
    __syncthreads();
    return row_total;
  }
  __device__ void finish() const { cg::this_cluster().barrier_wait(); }
};

template <typename T, int kVecs>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_cluster_split_row_fwd(
    const T* __restrict__ x, std::int64_t x_stride, T* __restrict__ y, std::int64_t y_stride, std::int64_t cols,
    std::int64_t slice_len, bool aligned) {
  const unsigned rank = cg::this_cluster().block_rank();
  const std::int64_t row = blockIdx.x / cg::this_cluster().num_blocks();
  const std::int64_t begin = std::min(cols, rank * slice_len);  // slice pointers keep fewer 64-bit values live
  const ClusterScope<MaxSum> scope;
  softmax_segment_forward<T, kVecs>(x + row * x_stride + begin, y + row * y_stride + begin, 0,
                                    std::min(cols - begin, slice_len), threadIdx.x, blockDim.x, aligned, scope);
  scope.finish();
}

template <typename T, int kVecs>
__global__ __launch_bounds__(kMaxThreads) void softmax_parallel_cluster_split_row_bwd(
    const T* __restrict__ y, std::int64_t y_stride, const T* __restrict__ dy, std::int64_t dy_stride,
    T* __restrict__ dx, std::int64_t dx_stride, std::int64_t cols, std::int64_t slice_len, bool aligned) {
  const unsigned rank = cg::this_cluster().block_rank();
  const std::int64_t row = blockIdx.x / cg::this_cluster().num_blocks();
  const std::int64_t begin = std::min(cols, rank * slice_len);
  const ClusterScope<float> scope;
  softmax_segment_backward<T, kVecs>(y + row * y_stride + begin, dy + row * dy_stride + begin,
                                     dx + row * dx_stride + begin, 0, std::min(cols - begin, slice_len), threadIdx.x,
                                     blockDim.x, aligned, scope);
  scope.finish();
}

struct ClusterShape {
  int cluster;
  int depth;
  int threads;
  std::int64_t slice_len;
};

// Smallest cluster whose slices fit one tile of kTargetThreads threads; the longest rows take
// 8 CTAs of up to 1024 threads (and more tiles past that).
// Misaligned rows (not `aligned`) get W - 1 elements of slack per slice (tile_span).
template <typename T>
ClusterShape cluster_shape(std::int64_t cols, bool aligned, int operands) {
  constexpr int W = vec_width<T>();
  const int depth = max_vecs<T>(operands);
  int cluster = 2;
  while (cluster < kMaxCluster && (cols + cluster - 1) / cluster > static_cast<std::int64_t>(kTargetThreads) * depth * W)
    cluster *= 2;
  const std::int64_t slice_len = ((cols + cluster - 1) / cluster + W - 1) / W * W;
  const std::int64_t lanes = ((tile_span<T>(slice_len, aligned) + W - 1) / W + depth - 1) / depth;
  const int threads = static_cast<int>(std::min<std::int64_t>(kMaxThreads, (lanes + 31) / 32 * 32));
  return {cluster, depth, threads, slice_len};
}

template <typename Kernel, typename... Args>
void launch_cluster(Kernel kernel, const ClusterShape& s, std::int64_t rows, cudaStream_t stream, Args... args) {
  const std::int64_t blocks = rows * s.cluster;
  if (blocks > 0x7fffffff) throw std::invalid_argument("softmax cluster_split_row: rows x cluster exceeds the grid limit");
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(static_cast<unsigned>(blocks));
  config.blockDim = dim3(static_cast<unsigned>(s.threads));
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeClusterDimension;
  attr.val.clusterDim.x = static_cast<unsigned>(s.cluster);
  attr.val.clusterDim.y = 1;
  attr.val.clusterDim.z = 1;
  config.attrs = &attr;
  config.numAttrs = 1;
  CP_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace

std::string cluster_split_row_unsupported(int device) {
  const ComputeCapability cc = compute_capability(device);
  if (cc.major != 9 || cc.minor != 0)
    return "needs an sm_90 GPU (thread-block clusters + distributed shared memory, compiled for sm_90a); device " +
           std::to_string(device) + " is sm_" + std::to_string(cc.major) + std::to_string(cc.minor);
  return "";
}

void cluster_split_row_forward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const ClusterShape s = cluster_shape<T>(op.cols, op.aligned, 1);
    dispatch_vecs<T, 1>(s.depth, [&](auto depth) {
      launch_cluster(softmax_parallel_cluster_split_row_fwd<T, decltype(depth)::value>, s, op.rows, ctx.stream,
                     static_cast<const T*>(op.in0), op.in0_stride, static_cast<T*>(op.out), op.out_stride, op.cols,
                     s.slice_len, op.aligned);
    });
  })
}

void cluster_split_row_backward(const RowOperands& op, const LaunchContext& ctx) {
  CP_DISPATCH_FLOAT_TYPES(op.dtype, T, {
    const ClusterShape s = cluster_shape<T>(op.cols, op.aligned, 2);
    dispatch_vecs<T, 2>(s.depth, [&](auto depth) {
      launch_cluster(softmax_parallel_cluster_split_row_bwd<T, decltype(depth)::value>, s, op.rows, ctx.stream,
                     static_cast<const T*>(op.in0), op.in0_stride, static_cast<const T*>(op.in1), op.in1_stride,
                     static_cast<T*>(op.out), op.out_stride, op.cols, s.slice_len, op.aligned);
    });
  })
}

}  // namespace cp::softmax_detail
