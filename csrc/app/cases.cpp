// The executable's fixed launch order. Each case launches exactly one kernel when validated,
// so `ncu --launch-skip K --launch-count 1 cuda_portfolio --test-only` profiles case K+1
// (counting from 1 in `cuda_portfolio --list`). Append new ops at the end unless the README's
// launch-order table says otherwise.
#include "app/harness.h"

namespace cp::app {

CaseList all_cases(int device) {
  CaseList cases;
  add_copy_cases(cases, device);
  return cases;
}

}  // namespace cp::app
