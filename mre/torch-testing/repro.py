import os

# MRE_BACKEND=torch runs the same code against PyTorch instead.
if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

import torch

x = torch.arange(4, dtype=torch.float32)
torch.testing.assert_close(x * 2, x + x)
print("OK: torch.testing.assert_close works")
