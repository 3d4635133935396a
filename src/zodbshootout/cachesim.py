"""``zodbshootout cachesim TRACE...``: the hit rate a traced workload gets at other cache sizes.

The traces come from ``--cache-trace DIR`` (see :mod:`zodbshootout.cachetrace`).
The numbers come from ZEO's own tools, imported and called, their printed
report read back:

- ``ZEO.scripts.cache_simul`` replays a trace through a simulated ZEO client
  cache of a given size (its ``CircularCacheSimulation``) and counts the
  loads that cache would have answered;
- ``ZEO.scripts.cache_stats`` counts the traced cache's own hits and misses
  (the *actual* row).

The simulated cache starts empty and is never emptied: the trace records
loads and stores, not the tool's clearing of caches before a cold read, so
the simulation answers "what would a cache of this size hit if this
process's loads came to it".  The actual row does include the clearing.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from zodbshootout.errors import UsageError

MB = 1 << 20

#: Sizes simulated unless --sizes says otherwise: around the working set of
#: the default workload (1000 objects of 128 bytes per worker) up to ZEO's
#: default cache size (20 MB).
DEFAULT_SIZES_BYTES = (64 << 10, 256 << 10, 1 << 20, 4 << 20, 20 << 20)

# cache_simul's report lines end with: DUR. LOADS HITS INVALS WRITES HITRATE EVICTS INUSE
_REPORT_COLUMNS = 8
# cache_stats's table of trace codes: "   COUNT  CODE  Function (action)".
_CODE_LINE = re.compile(r"^\s*([\d,]+)\s+([0-9a-f]{2})\s")
_LOAD_CODES = {0x20, 0x22, 0x24, 0x26}
_HIT_CODES = {0x22, 0x26}


@dataclass(frozen=True)
class HitCount:
    """Loads and how many of them a cache answered."""

    loads: int
    hits: int

    @property
    def hit_rate(self) -> float | None:
        """hits ÷ loads, or None without loads."""
        return self.hits / self.loads if self.loads else None

    def __add__(self, other: HitCount) -> HitCount:
        return HitCount(self.loads + other.loads, self.hits + other.hits)


@dataclass(frozen=True)
class TraceReport:
    """One trace: the traced cache's own counts and one simulation per size."""

    path: str
    actual: HitCount | None  # None: cache_stats could not count it
    simulated: dict[int, HitCount]  # cache size in bytes -> counts


def simulate(trace: str, size_bytes: int) -> HitCount:
    """Replay *trace* through ZEO's simulated client cache of *size_bytes*.

    cache_simul prints one report line per interval of the trace (here an
    hour, its longest) and its totals; the interval lines are summed, because
    the total line restarts its counts when an interval passes without an
    eviction.
    """
    from ZEO.scripts import cache_simul

    lines = _output_of(
        cache_simul.main, ["--size", repr(size_bytes / MB), "--interval", "60", trace]
    )
    total = HitCount(0, 0)
    in_intervals = False
    for line in lines:
        if line.lstrip().startswith("START TIME"):
            in_intervals = True
            continue
        if line.startswith("---"):
            break
        if in_intervals:
            columns = line.split()[-_REPORT_COLUMNS:]
            total += HitCount(loads=int(columns[1]), hits=int(columns[2]))
    return total


def observed(trace: str) -> HitCount | None:
    """The traced cache's own loads and hits, as ZEO's cache_stats counts them.

    None when cache_stats can't summarise the trace: it divides by the
    number of records that carry data and fails on a trace without any.
    """
    from ZEO.scripts import cache_stats

    try:
        printed = _output_of(cache_stats.main, [trace])
    except ZeroDivisionError:
        return None
    loads = hits = 0
    for line in printed:
        match = _CODE_LINE.match(line)
        if match:
            count, code = int(match.group(1).replace(",", "")), int(match.group(2), 16)
            if code in _LOAD_CODES:
                loads += count
            if code in _HIT_CODES:
                hits += count
    return HitCount(loads, hits)


def _output_of(main: object, argv: list[str]) -> list[str]:
    """Run a ZEO script's main(argv), returning what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            main(argv)  # type: ignore[operator]
        except SystemExit as e:
            if e.code not in (0, None):
                raise ValueError(f"{argv[-1]} is not a ZEO cache trace") from None
        except ZeroDivisionError:
            raise  # cache_stats on a trace without data records (see observed)
        except Exception as e:
            # ZEO's scripts trust their input; a damaged trace fails anywhere in them.
            raise ValueError(
                f"{argv[-1]} is not a readable ZEO cache trace ({type(e).__name__}: {e})"
            ) from None
    return out.getvalue().splitlines()


def check_trace(trace: str) -> None:
    """Raise ValueError unless *trace* starts as every cache trace does.

    ZEO and RelStorage both begin a trace with a start record (code 0x00, no
    oid); ZEO's scripts would read any other file as an empty trace.
    """
    from ZEO.cache import ClientCache

    if trace.endswith(".gz"):
        return  # the scripts read gzipped traces; they check those themselves
    record = struct.Struct(ClientCache.TRACE_FMT)
    with open(trace, "rb") as file:
        head = file.read(record.size)
    if len(head) == record.size:
        timestamp, encoded, oid_length, _tid, _end = record.unpack(head)
        if timestamp and encoded & 0xFF == 0 and oid_length == 0:
            return
    raise ValueError(f"{trace} is not a ZEO cache trace (written with --cache-trace)")


def report(trace: str, sizes_bytes: Sequence[int]) -> TraceReport:
    """The actual counts and a simulation per size for one trace file."""
    check_trace(trace)
    return TraceReport(
        path=trace,
        actual=observed(trace),
        simulated={size: simulate(trace, size) for size in sizes_bytes},
    )


def format_reports(reports: Sequence[TraceReport], sizes_bytes: Sequence[int]) -> list[str]:
    """An aligned table: trace × cache size → loads, hits, hit rate; totals for several."""
    rows = [("Trace", "Cache size", "Loads", "Hits", "Hit rate")]

    def row(name: str, size: str, counts: HitCount | None) -> tuple[str, str, str, str, str]:
        if counts is None:
            return (name, size, "n/a", "n/a", "n/a")
        rate = counts.hit_rate
        shown = "n/a" if rate is None else f"{100 * rate:.1f} %"
        return (name, size, str(counts.loads), str(counts.hits), shown)

    for item in reports:
        name = os.path.basename(item.path)
        rows.append(row(name, "actual", item.actual))
        for size in sizes_bytes:
            rows.append(row(name, format_size(size), item.simulated[size]))
    if len(reports) > 1:
        for size in sizes_bytes:
            total = sum((item.simulated[size] for item in reports), HitCount(0, 0))
            rows.append(row(f"all {len(reports)} traces", format_size(size), total))
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for index, cells in enumerate(rows):
        left = cells[0].ljust(widths[0])
        right = "  ".join(
            cell.rjust(width) for cell, width in zip(cells[1:], widths[1:], strict=True)
        )
        lines.append(f"{left}  {right}")
        if index == 0:
            lines.append("-" * len(lines[0]))
    return lines


def format_size(size_bytes: int) -> str:
    """1048576 -> '1 MiB', 65536 -> '64 KiB'."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if size_bytes >= factor:
            value = size_bytes / factor
            return f"{value:g} {unit}" if value < 100 else f"{value:.0f} {unit}"
    return f"{size_bytes} B"


def parse_sizes(text: str) -> list[int]:
    """``64KB,1MB,20MB`` -> bytes (KB, MB, GB are powers of 1024, as ZConfig's byte-size)."""
    sizes = []
    for part in text.split(","):
        match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)B?\s*", part, re.IGNORECASE)
        if not match:
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is not a size such as 512KB or 20MB"
            )
        factor = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
        size = int(float(match.group(1)) * factor)
        if size < 1 << 10:
            raise argparse.ArgumentTypeError(f"{part.strip()!r}: a cache needs at least 1KB")
        sizes.append(size)
    return sizes


# --- the subcommand -----------------------------------------------------------

DESCRIPTION = (
    "Replay cache traces written with --cache-trace through ZEO's own cache "
    "simulation (ZEO.scripts.cache_simul) and show the hit rate each workload "
    "would get at other cache sizes, beside the traced cache's own (cache_stats)."
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("traces", metavar="TRACE", nargs="+", help="trace files or directories")
    parser.add_argument(
        "--sizes",
        metavar="SIZE[,SIZE...]",
        type=parse_sizes,
        default=list(DEFAULT_SIZES_BYTES),
        help="cache sizes to simulate, e.g. 64KB,1MB,20MB (default: 64KB,256KB,1MB,4MB,20MB)",
    )


def find_traces(paths: Sequence[str]) -> list[str]:
    """The trace files named, or found (*.trace) in the directories named."""
    found = []
    for path in paths:
        if os.path.isdir(path):
            found.extend(
                sorted(
                    os.path.join(path, name) for name in os.listdir(path) if name.endswith(".trace")
                )
            )
        elif os.path.isfile(path):
            found.append(path)
        else:
            raise UsageError(f"{path}: no such trace file or directory")
    if not found:
        raise UsageError(f"no *.trace files in {', '.join(paths)}")
    return found


def run(args: argparse.Namespace) -> list[str]:
    """The lines ``cachesim`` prints; a bad trace is a UsageError."""
    sizes = sorted(set(args.sizes))
    reports = []
    for trace in find_traces(args.traces):
        try:
            reports.append(report(trace, sizes))
        except (ValueError, OSError) as e:
            raise UsageError(str(e)) from None
    return format_reports(reports, sizes)
