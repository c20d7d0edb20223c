"""sessiontree: append-only agent session trees (pi-compatible)."""

__version__ = "0.1.0"
