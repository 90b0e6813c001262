"""Where benchmark reports go by default (``--out`` of ``grizzly bench`` and the runners)."""

from __future__ import annotations

import os
from pathlib import Path


def default_results_dir() -> Path:
    """Where reports go unless ``--out`` names a folder: ``$GRIZZLY_CACHE_DIR/bench-results``
    (default ``~/.cache/grizzly-py/bench-results``, beside grizzly-py's other caches), never
    inside the checkout or the installed package. The reports quoted in docs/benchmarks.md
    were written with ``--out bench/results``."""
    return Path(os.environ.get("GRIZZLY_CACHE_DIR") or Path.home() / ".cache" / "grizzly-py") / "bench-results"
