import os

if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

import torch

import mre_torch_library  # noqa: F401  (loading registers torch.ops.mre)

out = torch.ops.mre.twice(torch.arange(4, dtype=torch.float32))
assert out.numpy().tolist() == [0.0, 2.0, 4.0, 6.0], out
print("OK: TORCH_LIBRARY works with only <torch/extension.h>")
