"""Runtime comparison of tinyop's scale_add under PyTorch and under Paddle compat.

Run by the gate's `compare` stage (`pq compare .pq/compare/scale_add.py --package tinyop`):
every call of tinyop.scale_add and of torch.ops.tinyop.scale_add is recorded on both sides;
the observations below name the values worth seeing side by side.
"""

import torch

import pq
import tinyop

x = torch.arange(12, dtype=torch.float32).reshape(3, 4) / 7
y = torch.linspace(-1.0, 1.0, 12).reshape(3, 4)

pq.observe("default alpha", tinyop.scale_add(x, y))
pq.observe("alpha 0.5", tinyop.scale_add(x, y, 0.5))
pq.observe("negative alpha, 1-d", tinyop.scale_add(x.reshape(12), y.reshape(12), -2.0))
pq.observe("non-contiguous", tinyop.scale_add(x.t(), y.t(), 3.0))
