// Timing and reporting for the executable: CUDA-event timing of one case, the table printed
// last, and the --json file with its env block.
#pragma once
#include <random>
#include <string>
#include <vector>

#include "app/harness.h"

namespace cp::app {

struct CaseReport {
  std::string name;
  std::string kernel;
  double bytes_moved = 0;
  double flops = 0;
  bool passed = false;
  bool skipped = false;  // the device or build lacks the kernel: not run, not timed, not counted as passed
  std::string detail;
  bool timed = false;
  double median_ms = 0, min_ms = 0, max_ms = 0;
  bool revalidated = false;  // the output checked again after the timed launches
};

// Warm-up, then `reps` samples of 10 launches each bracketed by CUDA events (per launch: median, min, max), then
// the output poisoned and one more launch validated, so a kernel that goes wrong under repetition (a workspace
// left dirty, a launch that writes nothing) is reported; report.passed turns false then.
void time_case(Case& c, std::mt19937_64& rng, int reps, CaseReport& report);
void print_timing_table(const std::vector<CaseReport>& reports);
// Creates the folders above `path` and checks the file can be written, so a bad --json path fails
// before the run, not after it.
bool prepare_json_path(const std::string& path);
bool write_json(const std::string& path, const std::vector<CaseReport>& reports, int device,
                unsigned long long seed, int reps);

}  // namespace cp::app
