"""Drift: what an upstream range changes that no conflict shows (new framework API in files
the fork builds or imports, stale copies, files touched on both sides, Paddle-side renames)."""
