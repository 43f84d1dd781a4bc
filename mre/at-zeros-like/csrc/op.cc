#include <torch/extension.h>
// Only for TORCH_LIBRARY on paddlepaddle 3.3.1 (see ../torch-library-include);
// harmless with PyTorch. The API under test is at::zeros_like.
#include <torch/library.h>

at::Tensor zeros_like_op(const at::Tensor& x) { return at::zeros_like(x); }

TORCH_LIBRARY(mre_zl, m) { m.def("zeros_like_op(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(mre_zl, CPU, m) { m.impl("zeros_like_op", &zeros_like_op); }

extern "C" PyObject* PyInit_mre_zeros_like(void) {
  static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "mre_zeros_like",
                                   nullptr, -1, nullptr};
  return PyModule_Create(&def);
}
