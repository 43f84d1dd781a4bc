import torch

from . import _C  # noqa: F401  (loading the library registers torch.ops.tinyop)

__all__ = ["scale_add"]


def scale_add(x, y, alpha=1.0):
    """Return x + alpha * y, computed by the tinyop C++ kernel."""
    return torch.ops.tinyop.scale_add(x, y, alpha)
