// The CUDA variant of scale_add: the same op (`tinyop::scale_add`), registered
// for CUDA tensors. Built only with TINYOP_CUDA=1 (see setup.py).
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty_like.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <algorithm>

namespace tinyop {
namespace {

// out[i] = x[i] + alpha * y[i] for i in [0, n), a grid-stride loop.
__global__ void scale_add_kernel(float* out, const float* x, const float* y,
                                 float alpha, int64_t n) {
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < n; i += stride) {
    out[i] = x[i] + alpha * y[i];
  }
}

}  // namespace

at::Tensor scale_add_cuda(const at::Tensor& x, const at::Tensor& y,
                          double alpha) {
  TORCH_CHECK(x.is_cuda() && y.is_cuda(), "scale_add: expected CUDA tensors");
  TORCH_CHECK(x.device() == y.device(),
              "scale_add: tensors on different devices");
  TORCH_CHECK(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat,
              "scale_add: expected float32 tensors");
  TORCH_CHECK(x.sizes() == y.sizes(), "scale_add: shape mismatch");
  const c10::cuda::CUDAGuard device_guard(x.device());
  at::Tensor xc = x.contiguous();
  at::Tensor yc = y.contiguous();
  at::Tensor out = at::empty_like(xc);
  const int64_t n = xc.numel();
  if (n == 0) {
    return out;
  }
  constexpr int kThreads = 256;
  const int blocks = static_cast<int>(
      std::min<int64_t>((n + kThreads - 1) / kThreads, 65535));
  scale_add_kernel<<<blocks, kThreads, 0, c10::cuda::getCurrentCUDAStream()>>>(
      out.data_ptr<float>(), xc.data_ptr<float>(), yc.data_ptr<float>(),
      static_cast<float>(alpha), n);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

}  // namespace tinyop

TORCH_LIBRARY_IMPL(tinyop, CUDA, m) {
  m.impl("scale_add", &tinyop::scale_add_cuda);
}
