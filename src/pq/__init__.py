"""pq: a patch-queue manager for forks of PyTorch custom-operator libraries on PaddlePaddle.

The fork's migration edits live as an ordered series of small patches (`series.yaml` +
`patches/`); pq keeps that series and the fork's commits in step.
"""

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """`pq.observe`, loaded on first use (`import pq` stays light)."""
    if name == "observe":
        from pq.compare.observe import observe

        return observe
    raise AttributeError(f"module 'pq' has no attribute {name!r}")
