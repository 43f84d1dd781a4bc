#include <torch/extension.h>
// Only for TORCH_LIBRARY on paddlepaddle 3.3.1 (see ../torch-library-include);
// harmless with PyTorch. The API under test is at::Tensor::reshape.
#include <torch/library.h>

at::Tensor reshape_op(const at::Tensor& x) { return x.reshape({3, -1}); }

TORCH_LIBRARY(mre_rs, m) { m.def("reshape_op(Tensor x) -> Tensor"); }

TORCH_LIBRARY_IMPL(mre_rs, CPU, m) { m.impl("reshape_op", &reshape_op); }

extern "C" PyObject* PyInit_mre_reshape(void) {
  static struct PyModuleDef def = {PyModuleDef_HEAD_INIT, "mre_reshape",
                                   nullptr, -1, nullptr};
  return PyModule_Create(&def);
}
