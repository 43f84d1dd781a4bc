#pragma once

#include <cstdint>

namespace tinyop {
namespace kernel {

// out[i] = x[i] + alpha * y[i] for i in [0, n)
void scale_add(float* out, const float* x, const float* y, float alpha,
               int64_t n);

}  // namespace kernel
}  // namespace tinyop
