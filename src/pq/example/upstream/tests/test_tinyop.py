import pytest
import torch

import tinyop


def test_smoke():
    x = torch.ones(4)
    y = torch.ones(4)
    torch.testing.assert_close(tinyop.scale_add(x, y), torch.full((4,), 2.0))


def test_alpha():
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = torch.ones(2, 3)
    out = tinyop.scale_add(x, y, alpha=0.5)
    torch.testing.assert_close(out, x + 0.5 * y)


def test_shape_mismatch():
    with pytest.raises(RuntimeError, match="shape mismatch"):
        tinyop.scale_add(torch.ones(3), torch.ones(4))
