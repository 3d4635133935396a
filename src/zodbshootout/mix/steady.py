"""--until-steady in the runner: watch the closed intervals, tell the workers to stop.

The rule itself is results.steady's.  The runner's word to the workers is
a file in a directory of its own (see mix.worker's ``_stop_check``): both
are created once the run is steady, and each worker ends its measurement at
the next interval it closes.  Only the name is chosen up front, so that a
signal landing before the runner's ``try`` has nothing on disk to leave.
"""

from __future__ import annotations

import pathlib
import secrets
import shutil
import tempfile
import threading
from collections.abc import Callable
from typing import Any

from zodbshootout.results.steady import SteadyRule, is_steady, relative_slope


class SteadyStop:
    """One database's steady watch: ``closed`` per merged interval, ``outcome`` at the end."""

    def __init__(
        self, rule: SteadyRule, interval_seconds: float, say: Callable[[str], None], name: str
    ) -> None:
        self.rule = rule
        self.interval_seconds = interval_seconds
        self.say = say
        self.name = name
        self.rates: list[float] = []
        self.stopped_at: float | None = None
        self.slope: float | None = None
        # Named now (the workers are told the path), made only when steady,
        # as config.loader names and makes the run's data directory.
        random_name = f"zs-steady-{secrets.token_hex(8)}"
        self._directory = pathlib.Path(tempfile.gettempdir()) / random_name
        self._ours = False
        self.stop_file = str(self._directory / "steady")
        self._lock = threading.Lock()

    def closed(self, transactions: int) -> None:
        """The next interval every worker closed, with its transactions."""
        with self._lock:
            self.rates.append(transactions / self.interval_seconds)
            if self.stopped_at is not None:
                return
            window = self.rule.window_intervals(self.interval_seconds)
            steady = is_steady(self.rule, self.rates, self.interval_seconds)
            if steady is None:
                if len(self.rates) >= window:
                    self.slope = relative_slope(self.rates[-window:], self.interval_seconds)
                return
            self.slope = steady
            self._ours = True  # before it exists: close() must not miss it
            try:
                self._directory.mkdir(mode=0o700)
            except FileExistsError:
                # Somebody else's (64 random bits: not expected): left alone,
                # and the run goes on to its maximum, as its record will say.
                self._ours = False
                return
            pathlib.Path(self.stop_file).touch()
            self.stopped_at = len(self.rates) * self.interval_seconds
        self.say(
            f"{self.name}: steady after {self.stopped_at:g} s (slope {steady:+.2%}/s of the "
            f"mean, bound {self.rule.bound:.2%}/s): stopping the workers"
        )

    def outcome(self) -> dict[str, Any]:
        """The record's ``steady`` entry."""
        return {
            **self.rule.as_data(),
            "stopped_at_seconds": self.stopped_at,
            "slope_per_second": self.slope,
        }

    def close(self) -> None:
        if self._ours:
            shutil.rmtree(self._directory, ignore_errors=True)
