from setuptools import setup
from torch.utils import cpp_extension

setup(
    name="tinyop",
    version="0.1.0",
    packages=["tinyop"],
    ext_modules=[
        cpp_extension.CppExtension(
            "tinyop._C",
            ["csrc/ops.cc", "csrc/kernel/scale_add.cc"],
        )
    ],
    cmdclass={"build_ext": cpp_extension.BuildExtension},
)
