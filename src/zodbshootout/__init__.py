"""zodbshootout: how many objects per second each ZODB storage adds, updates and reads.

The public API is small: load a configuration, run it, and render the result.
Everything else is internal and may change between releases.
"""

__version__ = "1.0.dev0"

from zodbshootout.config import ConfigError, load_config
from zodbshootout.options import RunOptions
from zodbshootout.results import Failure, Measurement, RunResult

__all__ = [
    "ConfigError",
    "Failure",
    "Measurement",
    "RunOptions",
    "RunResult",
    "__version__",
    "load_config",
]
