import os

if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

import torch

import mre_reshape  # noqa: F401  (loading registers torch.ops.mre_rs)

ok = True
for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
    x = torch.arange(6, dtype=dtype).reshape(2, 3)
    out = torch.ops.mre_rs.reshape_op(x)  # x.reshape({3, -1}) in C++
    good = (
        tuple(out.shape) == (3, 2)
        and out.dtype == dtype
        and out.numpy().tolist() == [[0, 1], [2, 3], [4, 5]]
    )
    print(f"{'ok  ' if good else 'FAIL'} input {dtype}: output {out.dtype}, shape {tuple(out.shape)}")
    ok = ok and good
if not ok:
    raise SystemExit("FAIL: x.reshape({3, -1}) differs from PyTorch")
print("OK: x.reshape({3, -1}) keeps dtype and values, shape (3, 2)")
