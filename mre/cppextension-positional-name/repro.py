import os

# MRE_BACKEND=torch runs the same code against PyTorch instead.
if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

from torch.utils import cpp_extension

# PyTorch's signature: CppExtension(name, sources, *args, **kwargs).
# Only the Extension object is built; the source file need not exist.
ext = cpp_extension.CppExtension("mre._C", ["csrc/op.cc"])
assert ext.name == "mre._C", ext.name
assert ext.sources == ["csrc/op.cc"], ext.sources
print("OK: CppExtension accepts a positional name")
