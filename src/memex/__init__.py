"""memex: recall for AI coding agents.

The library's face is `Memex` (`memex.api`); its filters are `Filters` and its results the records of
`memex.results`. They are imported on first use, so `memex --version` and the hooks stay fast.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

# One BLAS thread (a value the user set is kept). numpy reads it once, when it loads, so it is set here,
# before any of memex imports numpy. A search's matrix-vector products are bound by memory, not by the
# cores: with a team of threads per core they took twice the CPU (the idle team spins after each
# product, on CPU the query could use) for little wall time, and beside busy processes more wall time
# too (bench/query_latency.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

__version__ = "0.1.0"
__all__ = ["Filters", "Memex", "MemexError", "UserError", "__version__"]

if TYPE_CHECKING:
    from memex.api import Memex
    from memex.errors import MemexError, UserError
    from memex.store.queries import Filters

_LAZY = {
    "Memex": "memex.api",
    "Filters": "memex.store.queries",
    "MemexError": "memex.errors",
    "UserError": "memex.errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'memex' has no attribute {name!r}")
