import os

if os.environ.get("MRE_BACKEND", "paddle") == "paddle":
    import paddle

    paddle.enable_compat()

import torch

import mre_zeros_like  # noqa: F401  (loading registers torch.ops.mre_zl)

ok = True
for dtype in (torch.float32, torch.float64, torch.int32, torch.int64):
    x = torch.ones(2, 3, dtype=dtype)
    out = torch.ops.mre_zl.zeros_like_op(x)
    good = (
        tuple(out.shape) == (2, 3)
        and out.dtype == dtype
        and out.numpy().tolist() == [[0, 0, 0], [0, 0, 0]]
    )
    print(f"{'ok  ' if good else 'FAIL'} input {dtype}: output {out.dtype}, shape {tuple(out.shape)}")
    ok = ok and good
if not ok:
    raise SystemExit("FAIL: at::zeros_like(x) does not keep x's dtype")
print("OK: at::zeros_like(x) keeps x's shape and dtype, values are zero")
