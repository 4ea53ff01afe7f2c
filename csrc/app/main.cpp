// cuda_portfolio: validate and time every native kernel without Python.
//   cuda_portfolio --help | --list | --test-only | --json PATH | --negative-control
// Launch order is fixed (cases.cpp); validation launches come first, then timing launches.
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <random>
#include <string>
#include <vector>

#include "app/harness.h"
#include "app/report.h"
#include "copy/copy.h"

namespace {

const char* kUsage =
    "usage: cuda_portfolio [--test-only] [--json PATH] [--list] [--negative-control]\n"
    "                      [--device N] [--seed N] [--reps N] [--help]\n"
    "\n"
    "Validates every native kernel against a CPU reference (fresh random inputs, outputs\n"
    "poisoned with NaN first, inputs checked unchanged), then times each with CUDA events.\n"
    "\n"
    "  --test-only         validate only: one line per case (PASS, FAIL, or SKIP where this GPU or\n"
    "                      build lacks the kernel), then 'N passed, N failed' (', N skipped' when\n"
    "                      any); exit 0 only if none failed\n"
    "  --json PATH         validate, time, and write results with an env block to PATH (its folders\n"
    "                      are created and the file checked before the run)\n"
    "  --list              list the cases in launch order (no GPU needed)\n"
    "  --negative-control  run ONLY the deliberately unmasked copy kernel, which writes out of\n"
    "                      bounds: compute-sanitizer --tool memcheck must report it\n"
    "  --device N          CUDA device index (default 0)\n"
    "  --seed N            seed for the random inputs (default: fresh each run, printed)\n"
    "  --reps N            timed samples per case, each 10 launches back to back (default 50; the\n"
    "                      median per launch reported)\n"
    "\n"
    "Launch order: validation launches run in --list order, one kernel launch per case, so\n"
    "`ncu --launch-skip 6 --launch-count 1 cuda_portfolio --test-only` profiles case 7, the 1024x1024\n"
    "softmax_parallel forward.\n"
    "Exit codes: 0 all passed, 1 a case failed, 2 bad usage, 3 no usable CUDA GPU.\n";

struct Options {
  bool test_only = false, list = false, negative_control = false;
  std::string json_path;
  int device = 0, reps = 50;
  bool seed_given = false;
  unsigned long long seed = 0;
};

bool parse(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "cuda_portfolio: %s needs a value\n", flag);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else if (a == "--test-only") {
      o.test_only = true;
    } else if (a == "--list") {
      o.list = true;
    } else if (a == "--negative-control") {
      o.negative_control = true;
    } else if (a == "--json") {
      const char* v = value("--json");
      if (!v) return false;
      o.json_path = v;
    } else if (a == "--device" || a == "--seed" || a == "--reps") {
      const char* v = value(a.c_str());
      if (!v) return false;
      char* end = nullptr;
      const unsigned long long n = std::strtoull(v, &end, 10);
      if (*end != '\0') {
        std::fprintf(stderr, "cuda_portfolio: %s expects an integer, got '%s'\n", a.c_str(), v);
        return false;
      }
      if (a == "--device") o.device = static_cast<int>(n);
      if (a == "--seed") o.seed = n, o.seed_given = true;
      if (a == "--reps") o.reps = std::max(1, static_cast<int>(n));
    } else {
      std::fprintf(stderr, "cuda_portfolio: unknown argument '%s' (see --help)\n", a.c_str());
      return false;
    }
  }
  return true;
}

// A clear one-line refusal instead of a crash when there is no driver or no device.
bool require_gpu(int device) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err != cudaSuccess || count == 0) {
    std::fprintf(stderr, "cuda_portfolio: no usable CUDA GPU (%s). --help and --list work without one.\n",
                 err != cudaSuccess ? cudaGetErrorString(err) : "no device found");
    return false;
  }
  if (device < 0 || device >= count) {
    std::fprintf(stderr, "cuda_portfolio: --device %d out of range (%d device(s))\n", device, count);
    return false;
  }
  return cudaSetDevice(device) == cudaSuccess;
}

int run_negative_control(int device) {
  constexpr std::int64_t n = 1000;  // not a multiple of 256: the last block runs past the end
  cp::app::DeviceBuffer src(cp::copy_negative_control_padded(n) * 4), dst(n * 4);
  std::puts("negative control: copy_unmasked_negative_control_kernel on 1000 float32 (grid rounded up to 1024 threads)");
  std::puts("expected under compute-sanitizer --tool memcheck: 'Invalid __global__ write of size 4 bytes' errors");
  nvtxRangePushA("negative_control copy_unmasked");
  cp::copy_unmasked_negative_control(cp::DType::F32, src.get(), dst.get(), n, nullptr, device);
  const cudaError_t err = cudaDeviceSynchronize();
  nvtxRangePop();
  std::printf("negative control finished: %s\n", cudaGetErrorString(err));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, opt)) return 2;

  cp::app::CaseList cases = cp::app::all_cases(opt.device);
  if (opt.list) {
    for (std::size_t i = 0; i < cases.size(); ++i)
      std::printf("%3zu  %-28s %s\n", i + 1, cases[i]->kernel().c_str(), cases[i]->name().c_str());
    return 0;
  }
  if (opt.test_only && !opt.json_path.empty()) {
    std::fprintf(stderr, "cuda_portfolio: --json times the cases, --test-only does not: give one of them\n");
    return 2;
  }
  if (!require_gpu(opt.device)) return 3;
  if (opt.negative_control) return run_negative_control(opt.device);
  if (!opt.test_only && !opt.json_path.empty() && !cp::app::prepare_json_path(opt.json_path)) return 2;

  const unsigned long long seed = opt.seed_given ? opt.seed : std::random_device{}();
  std::mt19937_64 rng(seed);
  std::printf("cuda_portfolio: %zu cases, seed %llu\n", cases.size(), seed);

  std::vector<cp::app::CaseReport> reports;
  int passed = 0, failed = 0, skipped = 0;
  for (auto& c : cases) {
    cp::app::CaseReport r{c->name(), c->kernel(), c->bytes_moved(), c->flops()};
    try {
      c->prepare(rng);
      nvtxRangePushA(("validate " + c->kernel()).c_str());
      c->launch(nullptr);
      CP_CUDA_CHECK(cudaDeviceSynchronize());
      nvtxRangePop();
      const cp::app::Verdict v = c->verify();
      r.passed = v.passed;
      r.skipped = v.skipped;
      r.detail = v.detail;
    } catch (const std::exception& e) {
      r.passed = false;
      r.detail = std::string("error: ") + e.what();
    }
    (r.skipped ? skipped : r.passed ? passed : failed) += 1;
    std::printf("%s  %s  %s\n", r.skipped ? "SKIP" : r.passed ? "PASS" : "FAIL", r.name.c_str(), r.detail.c_str());
    std::fflush(stdout);
    reports.push_back(std::move(r));
  }

  if (!opt.test_only) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      if (!reports[i].passed) continue;  // a wrong kernel is not timed
      try {
        cp::app::time_case(*cases[i], rng, opt.reps, reports[i]);
      } catch (const std::exception& e) {
        reports[i].passed = false;
        reports[i].detail = std::string("error while timing: ") + e.what();
      }
      if (!reports[i].passed) --passed, ++failed;  // an error, or wrong after the timed launches
    }
    cp::app::print_timing_table(reports);
    if (!opt.json_path.empty()) {
      if (!cp::app::write_json(opt.json_path, reports, opt.device, seed, opt.reps)) return 1;
      std::printf("wrote %s\n", opt.json_path.c_str());
    }
  }
  if (skipped > 0)
    std::printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
  else
    std::printf("%d passed, %d failed\n", passed, failed);
  return failed == 0 ? 0 : 1;
}
