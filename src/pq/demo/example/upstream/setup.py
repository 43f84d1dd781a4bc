import os

from setuptools import setup
from torch.utils import cpp_extension

# TINYOP_CUDA=1 builds the CUDA variant: the same library plus the CUDA kernel of
# csrc/cuda/, compiled by nvcc (needs a CUDA build of PyTorch and the CUDA toolkit).
WITH_CUDA = os.environ.get("TINYOP_CUDA") == "1"

setup(
    name="tinyop",
    version="0.1.0",
    packages=["tinyop"],
    ext_modules=[
        cpp_extension.CppExtension(
            "tinyop._C",
            ["csrc/ops.cc", "csrc/kernel/scale_add.cc"],
        )
        if not WITH_CUDA
        else cpp_extension.CUDAExtension(
            "tinyop._C",
            ["csrc/ops.cc", "csrc/kernel/scale_add.cc", "csrc/cuda/scale_add.cu"],
        )
    ],
    cmdclass={"build_ext": cpp_extension.BuildExtension},
)
