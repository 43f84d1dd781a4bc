import os

# MRE_BACKEND=torch builds the same sources against PyTorch instead.
if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

from setuptools import setup
from torch.utils import cpp_extension

setup(
    name="mre_zeros_like",
    ext_modules=[
        cpp_extension.CppExtension(
            name="mre_zeros_like",
            sources=["csrc/op.cc"],
        )
    ],
    cmdclass={"build_ext": cpp_extension.BuildExtension},
)
