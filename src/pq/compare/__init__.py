"""Runtime comparison: one script under real PyTorch and under Paddle compat, traced.

The two traces are aligned call by call and the FIRST divergence beyond tolerance is
reported with its call site and layer (docs/compare.md).
"""
