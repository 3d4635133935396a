"""What cachesim shows, in every format, in the shape of RelStorage's cache notes.

One row per trace (or group of a run's traces) and cache size, with the
hit rate and the replay time of each policy, after an *actual* row for a
trace written with ``--cache-trace``: the traced cache's own hit rate,
under the policy that simulates that storage's cache, and its size.  The
formats lay these out (:mod:`zodbshootout.render.formats`).
"""

from __future__ import annotations

from typing import Any

from zodbshootout.results.cachesim import GroupReport, Simulation

#: Which policy simulates the cache of which traced storage kind.
POLICY_OF_KIND = {"zeo": "zeo", "relstorage": "relstorage"}


def format_size(size_bytes: int) -> str:
    """1048576 -> '1 MiB', 65536 -> '64 KiB'."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor:
            value = size_bytes / factor
            return f"{value:.3g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{size_bytes} B"


def plain_rows(simulation: Simulation) -> list[dict[str, Any]]:
    """One plain record per row: what every format shows."""
    rows = []
    for group in simulation.groups:
        if group.actual is not None:
            rows.append(_actual_row(group, simulation.policies))
        for size in simulation.sizes_bytes:
            outcomes = {p: group.simulated[(p, size)] for p in simulation.policies}
            loads = next(iter(outcomes.values())).loads
            rows.append(
                {
                    "trace": group.name,
                    "source": "simulated",
                    "cache_size_bytes": size,
                    "loads": loads,
                    "hit_rate": {p: o.hit_rate for p, o in outcomes.items()},
                    "seconds": {p: o.seconds for p, o in outcomes.items()},
                }
            )
    return rows


def _actual_row(group: GroupReport, policies: list[str]) -> dict[str, Any]:
    assert group.actual is not None
    column = POLICY_OF_KIND.get(group.kind or "")
    return {
        "trace": group.name,
        "source": "actual",
        "kind": group.kind,
        "cache_size_bytes": group.actual_size_bytes,
        "loads": group.actual.loads,
        "hits": group.actual.hits,
        "hit_rate": {p: group.actual.hit_rate if p == column else None for p in policies},
        "seconds": {p: None for p in policies},
        "phases": {
            phase: {"loads": c.loads, "hits": c.hits, "hit_rate": c.hit_rate}
            for phase, c in group.actual_phases.items()
        },
    }


def document(simulation: Simulation) -> dict[str, Any]:
    """What cachesim found as JSON-compatible data."""
    return {
        "versions": simulation.versions,
        "policies": simulation.policies,
        "sizes_bytes": simulation.sizes_bytes,
        "groups": [
            {"trace": g.name, "format": g.format, "kind": g.kind, "files": g.files}
            for g in simulation.groups
        ],
        "rows": plain_rows(simulation),
    }


def notes(simulation: Simulation) -> list[str]:
    """The lines under the table: the libraries' versions, and what an actual row is."""
    packages = simulation.packages
    versions = ", ".join(
        f"{p}: {packages[p]} {v}" if p in packages else f"{p}: {v}"
        for p, v in simulation.versions.items()
    )
    notes = [f"versions: {versions}"]
    if any(g.actual is not None for g in simulation.groups):
        notes.append(
            "actual: the traced cache's own hits and size, under the policy that "
            "simulates it; the simulations start empty and are never cleared"
        )
    return notes


def text_rows(simulation: Simulation) -> list[list[str]]:
    """The table as text, header first: a row per trace (or group) and cache size."""
    policies = simulation.policies
    return [_header(policies)] + [_cells(row, policies) for row in plain_rows(simulation)]


def _header(policies: list[str]) -> list[str]:
    return (
        ["Trace", "Cache size", "Loads"]
        + [f"Hits {p}" for p in policies]
        + [f"Time {p}" for p in policies]
    )


def _cells(row: dict[str, Any], policies: list[str]) -> list[str]:
    size = row["cache_size_bytes"]
    if row["source"] == "actual":
        shown_size = "actual" + (f" {format_size(size)}" if size else "")
    else:
        shown_size = format_size(size)
    rates = [_percent(row["hit_rate"][p]) for p in policies]
    times = [_seconds(row["seconds"][p]) for p in policies]
    return [row["trace"], shown_size, str(row["loads"]), *rates, *times]


def _percent(rate: float | None) -> str:
    return "" if rate is None else f"{100 * rate:.1f} %"


def _seconds(seconds: float | None) -> str:
    return "" if seconds is None else f"{seconds:.3f} s"


def csv_table(simulation: Simulation) -> tuple[list[str], list[list[Any]]]:
    """The CSV's header and rows: plain numbers, empty where there is none."""
    policies = simulation.policies
    header = ["trace", "source", "cache_size_bytes", "loads"]
    header += [f"hit_rate_{p}" for p in policies] + [f"seconds_{p}" for p in policies]
    rows = [
        [row["trace"], row["source"], row["cache_size_bytes"] or "", row["loads"]]
        + [_number(row["hit_rate"][p], 4) for p in policies]
        + [_number(row["seconds"][p], 4) for p in policies]
        for row in plain_rows(simulation)
    ]
    return header, rows


def _number(value: float | None, digits: int) -> str:
    return "" if value is None else f"{value:.{digits}f}"
