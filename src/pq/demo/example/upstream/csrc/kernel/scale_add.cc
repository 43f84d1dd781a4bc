#include "scale_add.h"

namespace tinyop {
namespace kernel {

void scale_add(float* out, const float* x, const float* y, float alpha,
               int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    out[i] = x[i] + alpha * y[i];
  }
}

}  // namespace kernel
}  // namespace tinyop
