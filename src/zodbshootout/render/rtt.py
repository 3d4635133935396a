"""The lines an ``--rtt`` ladder adds under the table: the RTTs seen, and the fit.

``zeo_fs: round trip 0.05 ms direct; through the proxy 0.06, 2.07, 5.06 ms
(asked +0, +2, +5 ms)`` and ``zeo_fs cold (n=50, c=1): +50.8 ms per
transaction per added ms of RTT ≈ 51 round trips per transaction (--work
counted 51)``: see zodbshootout.results.rtt for what the fit is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from zodbshootout.results.record import RunResult
from zodbshootout.results.rtt import RttFit, classic_fits, ladder_rows, measured_rtt, stored_fits

__all__ = ["format_fit", "ladder_notes", "mix_fit_notes", "rtt_notes"]


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f}"


def format_fit(fit: RttFit, *, where: bool = True) -> str:
    """One fit as a sentence; *where*: with the database's name and the level."""
    level = f" (n={fit.object_count}, c={fit.concurrency})" if fit.object_count else ""
    head = f"{fit.database} {fit.what}{level}" if where else fit.what
    # A slope at or below zero is the noise's, not a count of round trips.
    reading = (
        f"≈ {fit.slope:.1f} round trips per transaction"
        if fit.slope > 0
        else "no growth with the RTT that this run could measure"
    )
    text = (
        f"{head}: {fit.slope:+.2f} ms per transaction per added ms of RTT {reading} "
        f"(local cost {fit.intercept_seconds * 1e3:.3g} ms; {len(fit.points)} steps)"
    )
    if fit.counted is not None:
        text += f"; --work counted {fit.counted:.1f} round trips per transaction"
    return text


def ladder_notes(metadata: Mapping[str, Any]) -> list[str]:
    """Per database of the ladder: the RTT seen directly and through the proxy at each step."""
    rows = ladder_rows(metadata)
    by_database: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows.values():
        by_database.setdefault(str(row["database"]), []).append(row)
    notes = []
    for database, steps in by_database.items():
        base = [(row.get("base_seconds") or {}).get(row.get("server")) for row in steps]
        seen = [measured_rtt(row) for row in steps]
        asked = ", ".join(f"+{row['asked_seconds'] * 1e3:g}" for row in steps)
        direct = [b for b in base if b is not None]
        text = f"{database}: round trip"
        if direct:
            text += f" {_ms(min(direct))} ms direct;"
        through = ", ".join("?" if s is None else _ms(s) for s in seen)
        notes.append(f"{text} through the proxy {through} ms (asked {asked} ms)")
    unproxied = (metadata.get("rtt") or {}).get("unproxied") or []
    if unproxied:
        notes.append(
            f"{', '.join(unproxied)}: no network server, measured once: "
            "the same at every --rtt step"
        )
    return notes


def rtt_notes(result: RunResult) -> list[str]:
    """A classic run's ladder notes and fits (computed from the timings)."""
    if not ladder_rows(result.metadata):
        return []
    return ladder_notes(result.metadata) + [format_fit(fit) for fit in classic_fits(result)]


def mix_fit_notes(metadata: Mapping[str, Any], database: str) -> list[str]:
    """A mix run's fits whose last step is the record *database* (shown under its block)."""
    notes = []
    fits = [fit for fit in stored_fits(metadata) if fit.rows and fit.rows[-1] == database]
    if fits:
        first = fits[0]
        notes.append(f"{first.database} against the RTT, {', '.join(first.rows)}:")
        notes += [format_fit(fit, where=False) for fit in fits]
    return notes
