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


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_matches_cpu():
    torch.manual_seed(0)
    x = torch.randn(3, 1000)
    y = torch.randn(1000, 3).t()  # not contiguous
    expected = tinyop.scale_add(x, y, alpha=0.5)
    out = tinyop.scale_add(x.cuda(), y.cuda(), alpha=0.5)
    assert out.is_cuda
    torch.testing.assert_close(out.cpu(), expected)
