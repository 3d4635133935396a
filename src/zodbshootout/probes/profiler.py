"""``-p DIR``: a cProfile of each timed phase's run, per worker, saved after the step.

The one probe inside the timed region: the user asked for it, and the
output says so.  The profile covers the phase's run only, not the barriers.
"""

from __future__ import annotations

import contextlib
import cProfile
import io
import marshal
import pstats
from collections.abc import Iterator
from typing import Any

from zodbshootout.outputfile import write_atomically
from zodbshootout.probes.base import Probe, Step

__all__ = ["Profiler", "write_profile"]


class Profiler(Probe):
    """Profiles each timed step into ``PREFIX-PHASE-wWORKER.prof`` and ``.txt``."""

    def __init__(self, prefix: str, worker: int) -> None:
        self.prefix = prefix
        self.worker = worker
        self._profile: cProfile.Profile | None = None

    def before(self, step: Step) -> None:
        self._profile = cProfile.Profile() if step.timed else None

    @contextlib.contextmanager
    def during(self, step: Step) -> Iterator[None]:
        if self._profile is None:
            yield
            return
        self._profile.enable()
        try:
            yield
        finally:
            self._profile.disable()

    def after(self, step: Step) -> dict[str, Any]:
        if self._profile is not None:
            write_profile(self._profile, f"{self.prefix}-{step.phase}-w{self.worker}")
            self._profile = None
        return {}


def write_profile(profile: cProfile.Profile, prefix: str) -> None:
    """Save a .prof file (for pstats, snakeviz) and a readable .txt beside it.

    Each is written whole or not at all (see write_atomically): a full disk
    leaves no partial .prof that pstats would fail to read later.
    """
    profile.create_stats()
    # What Profile.dump_stats writes, built in memory first.
    write_atomically(prefix + ".prof", marshal.dumps(profile.stats))  # type: ignore[attr-defined]
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(60)
    write_atomically(prefix + ".txt", text.getvalue())
