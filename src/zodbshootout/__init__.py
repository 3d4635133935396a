"""zodbshootout: how many objects per second each ZODB storage adds, updates and reads.

The public API is small: load a configuration, run it, and render the result.
Everything else is internal and may change between releases.

The names are imported on first use (lazy import, PEP 562), so that ``import
zodbshootout`` stays light: ``show`` and ``compare`` never load ZODB.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "1.0.dev0"

#: Public name -> the module that defines it.
_PUBLIC = {
    "ConfigError": "zodbshootout.config.loader",
    "load_config": "zodbshootout.config.loader",
    "RunOptions": "zodbshootout.options.run",
    "Failure": "zodbshootout.results.record",
    "Measurement": "zodbshootout.results.record",
    "RunResult": "zodbshootout.results.record",
}

__all__ = [*sorted(_PUBLIC), "__version__"]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(importlib.import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'zodbshootout' has no attribute {name!r}")
