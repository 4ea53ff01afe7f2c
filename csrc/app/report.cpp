#include "app/report.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#ifndef CUDA_PORTFOLIO_GIT_COMMIT
#define CUDA_PORTFOLIO_GIT_COMMIT "unknown"
#endif

namespace cp::app {
namespace {

std::string json_escape(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", ch);
      out += buf;
    } else {
      out += ch;
    }
  }
  return out;
}

int device_attribute(cudaDeviceAttr attr, int device) {
  int v = 0;
  return cudaDeviceGetAttribute(&v, attr, device) == cudaSuccess ? v : -1;
}

}  // namespace

void time_case(Case& c, std::mt19937_64& rng, int reps, CaseReport& report) {
  c.prepare(rng);
  nvtxRangePushA(("time " + c.kernel()).c_str());
  for (int i = 0; i < 3; ++i) c.launch(nullptr);  // warm-up
  CP_CUDA_CHECK(cudaDeviceSynchronize());
  cudaEvent_t start, stop;
  CP_CUDA_CHECK(cudaEventCreate(&start));
  CP_CUDA_CHECK(cudaEventCreate(&stop));
  // A sample is kLaunchesPerSample launches back to back between two events, divided by their count: each launch's
  // host work (argument checks, occupancy and attribute queries, tensor maps) then overlaps the launch before it,
  // where one launch between two events on an idle GPU also timed that host work.
  constexpr int kLaunchesPerSample = 10;
  std::vector<float> ms(static_cast<std::size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    CP_CUDA_CHECK(cudaEventRecord(start));
    for (int j = 0; j < kLaunchesPerSample; ++j) c.launch(nullptr);
    CP_CUDA_CHECK(cudaEventRecord(stop));
    CP_CUDA_CHECK(cudaEventSynchronize(stop));
    CP_CUDA_CHECK(cudaEventElapsedTime(&ms[static_cast<std::size_t>(i)], start, stop));
    ms[static_cast<std::size_t>(i)] /= kLaunchesPerSample;
  }
  nvtxRangePop();
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  std::sort(ms.begin(), ms.end());
  report.timed = true;
  report.median_ms = ms[ms.size() / 2];
  report.min_ms = ms.front();
  report.max_ms = ms.back();
  c.poison_outputs();
  c.launch(nullptr);
  CP_CUDA_CHECK(cudaDeviceSynchronize());
  const Verdict again = c.verify();
  report.revalidated = again.passed;
  if (!again.passed) {
    report.passed = false;
    report.detail = "WRONG after timing: " + again.detail;
  }
}

void print_timing_table(const std::vector<CaseReport>& reports) {
  std::printf("\n%-58s %10s %10s %10s\n", "case", "median_ms", "GB/s", "TFLOP/s");
  for (const auto& r : reports) {
    if (!r.timed) {
      std::printf("%-58s %10s\n", r.name.c_str(), r.skipped ? "skipped" : r.passed ? "-" : "FAILED");
      continue;
    }
    const double s = r.median_ms * 1e-3;
    std::printf("%-58s %10.4f %10.1f %10.2f%s\n", r.name.c_str(), r.median_ms,
                r.bytes_moved > 0 ? r.bytes_moved / s * 1e-9 : 0.0, r.flops > 0 ? r.flops / s * 1e-12 : 0.0,
                r.passed ? "" : "  WRONG");
  }
}

bool prepare_json_path(const std::string& path) {
  const std::filesystem::path file(path);
  std::error_code err;
  if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), err);
  if (err || !std::ofstream(file, std::ios::app)) {
    std::fprintf(stderr, "cuda_portfolio: cannot write %s%s%s\n", path.c_str(), err ? ": " : "",
                 err ? err.message().c_str() : "");
    return false;
  }
  return true;
}

bool write_json(const std::string& path, const std::vector<CaseReport>& reports, int device,
                unsigned long long seed, int reps) {
  std::ofstream f(path);
  if (!f) {
    std::fprintf(stderr, "cuda_portfolio: cannot write %s\n", path.c_str());
    return false;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, device);
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  const char* commit_env = std::getenv("CUDA_PORTFOLIO_GIT_COMMIT");
  const std::string commit = commit_env && *commit_env ? commit_env : CUDA_PORTFOLIO_GIT_COMMIT;
  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));

  f << "{\n  \"env\": {\n"
    << "    \"tool\": \"cuda_portfolio executable\",\n"
    << "    \"gpu\": \"" << json_escape(prop.name) << "\",\n"
    << "    \"compute_capability\": \"" << prop.major << "." << prop.minor << "\",\n"
    << "    \"sm_count\": " << prop.multiProcessorCount << ",\n"
    << "    \"l2_bytes\": " << prop.l2CacheSize << ",\n"
    << "    \"cuda_driver_api_version\": " << driver << ",\n"
    << "    \"cuda_runtime_version\": " << runtime << ",\n"
    << "    \"sm_clock_max_khz\": " << device_attribute(cudaDevAttrClockRate, device) << ",\n"
    << "    \"memory_clock_max_khz\": " << device_attribute(cudaDevAttrMemoryClockRate, device) << ",\n"
    << "    \"memory_bus_width_bits\": " << device_attribute(cudaDevAttrGlobalMemoryBusWidth, device) << ",\n"
    << "    \"commit\": \"" << json_escape(commit) << "\",\n"
    << "    \"date\": \"" << date << "\",\n"
    << "    \"seed\": " << seed << ",\n"
    << "    \"timing_method\": \"cuda events around 10 launches back to back, per launch, median of " << reps
    << " such samples after 3 warm-up launches; inputs not rotated (L2 warm for cases under 60 MiB)\"\n"
    << "  },\n  \"results\": [\n";
  for (std::size_t i = 0; i < reports.size(); ++i) {
    const auto& r = reports[i];
    const double s = r.median_ms * 1e-3;
    f << "    {\"case\": \"" << json_escape(r.name) << "\", \"kernel\": \"" << json_escape(r.kernel)
      << "\", \"passed\": " << (r.passed ? "true" : "false") << ", \"skipped\": " << (r.skipped ? "true" : "false")
      << ", \"detail\": \"" << json_escape(r.detail) << "\"";
    if (r.timed) {
      f << ", \"median_ms\": " << r.median_ms << ", \"min_ms\": " << r.min_ms << ", \"max_ms\": " << r.max_ms
        << ", \"bytes\": " << r.bytes_moved << ", \"flops\": " << r.flops
        << ", \"gb_per_s\": " << (r.bytes_moved > 0 ? r.bytes_moved / s * 1e-9 : 0.0)
        << ", \"tflop_per_s\": " << (r.flops > 0 ? r.flops / s * 1e-12 : 0.0)
        << ", \"revalidated\": " << (r.revalidated ? "true" : "false");
    }
    f << "}" << (i + 1 < reports.size() ? "," : "") << "\n";
  }
  f << "  ]\n}\n";
  return static_cast<bool>(f);
}

}  // namespace cp::app
