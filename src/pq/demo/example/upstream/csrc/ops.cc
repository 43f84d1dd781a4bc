#include <torch/extension.h>

#include "kernel/scale_add.h"

namespace tinyop {

at::Tensor scale_add(const at::Tensor& x, const at::Tensor& y, double alpha) {
  TORCH_CHECK(x.is_cpu() && y.is_cpu(), "scale_add: expected CPU tensors");
  TORCH_CHECK(x.scalar_type() == at::kFloat && y.scalar_type() == at::kFloat,
              "scale_add: expected float32 tensors");
  TORCH_CHECK(x.sizes() == y.sizes(), "scale_add: shape mismatch");
  at::Tensor xc = x.contiguous();
  at::Tensor yc = y.contiguous();
  at::Tensor out = torch::empty_like(xc);
  kernel::scale_add(out.data_ptr<float>(), xc.data_ptr<float>(),
                    yc.data_ptr<float>(), static_cast<float>(alpha),
                    xc.numel());
  return out;
}

}  // namespace tinyop

TORCH_LIBRARY(tinyop, m) {
  m.def("scale_add(Tensor x, Tensor y, float alpha=1.0) -> Tensor");
}

TORCH_LIBRARY_IMPL(tinyop, CPU, m) {
  m.impl("scale_add", &tinyop::scale_add);
}

// Lets `import tinyop._C` load the library; the ops register themselves.
extern "C" PyObject* PyInit__C(void) {
  static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_C", nullptr,
                                          -1, nullptr};
  return PyModule_Create(&module_def);
}
