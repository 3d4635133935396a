"""``zodbshootout cachesim TRACE...``: the hit rate traced workloads get per cache and size.

Traces are read through one adapter (:mod:`zodbshootout.cachesim.records`)
and replayed through each policy asked for
(:mod:`zodbshootout.cachesim.policies`) at each size, every replay into an
empty cache.  The traces a run wrote with ``--cache-trace DIR`` (one per
worker process, stage and repetition) are grouped by database, object
count, concurrency and stage: each file is replayed on its own, as its
worker's cache saw it, and a group's counts are the sums of its files'.
No total mixes groups.

A trace written with ``--cache-trace`` also says how the traced cache did
(its *actual* row, counted as the run's hit-rate row counts: one load per
load the connections asked for) and, since this version, the cache's size.
"""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Sequence

from zodbshootout.cachesim.policies import MIN_SIZE_BYTES, POLICIES
from zodbshootout.cachesim.records import DEFAULT_MAX_BYTES, MAX_MAX_BYTES, Trace, read_trace
from zodbshootout.errors import UsageError
from zodbshootout.results.cachesim import GroupReport, HitCount, Outcome, Simulation

MB = 1 << 20

#: Sizes simulated unless --sizes says otherwise: around the working set of
#: the default workload (1000 objects of 128 bytes per worker) up to ZEO's
#: default cache size (20 MB).
DEFAULT_SIZES_BYTES = (64 << 10, 256 << 10, 1 << 20, 4 << 20, 20 << 20)
DEFAULT_POLICIES = ("zeo", "relstorage", "lru")

#: A trace file's name under --cache-trace DIR (see probes.cache_trace.trace_path).
_RUN_TRACE = re.compile(r"^(?P<group>.+-n\d+-c\d+)-r\d+-(?P<stage>[a-z]+)-w\d+\.trace$")


def simulate(
    paths: Sequence[str],
    sizes_bytes: Sequence[int],
    policies: Sequence[str],
    max_trace_bytes: int = DEFAULT_MAX_BYTES,
) -> Simulation:
    """Read, group and replay the traces named (files, or *.trace in directories).

    *max_trace_bytes* bounds each trace (decompressed): see records.read_trace.
    """
    groups: dict[str, GroupReport] = {}
    skipped: list[str] = []
    for path, in_directory in find_traces(paths):
        try:
            trace = read_trace(path, max_trace_bytes)
        except UsageError as e:
            if not in_directory:
                raise
            skipped.append(f"skipped {path}: {e}")
            continue
        _add(groups, trace, sizes_bytes, policies)
    if not groups:
        raise UsageError(f"no readable trace in {', '.join(paths)}")
    return Simulation(
        list(groups.values()),
        list(sizes_bytes),
        list(policies),
        {name: POLICIES[name].version() for name in policies},
        skipped,
        {name: POLICIES[name].package for name in policies},
    )


def _add(
    groups: dict[str, GroupReport],
    trace: Trace,
    sizes_bytes: Sequence[int],
    policies: Sequence[str],
) -> None:
    name = group_name(trace.path)
    group = groups.get(name)
    if group is None:
        group = groups[name] = GroupReport(name, [], trace.format)
    group.files.append(trace.path)
    if trace.traced is not None:
        counts = HitCount(trace.traced.loads, trace.traced.hits)
        group.actual = counts if group.actual is None else group.actual + counts
        group.kind = trace.traced.kind or group.kind
        group.actual_size_bytes = trace.traced.cache_size_bytes or group.actual_size_bytes
        for phase, (loads, hits) in trace.traced.phases.items():
            counted = group.actual_phases.get(phase, HitCount(0, 0))
            group.actual_phases[phase] = counted + HitCount(loads, hits)
    for policy in policies:
        for size in sizes_bytes:
            outcome = POLICIES[policy].replay(trace.accesses, size)
            earlier = group.simulated.get((policy, size), Outcome(0, 0, 0.0))
            group.simulated[(policy, size)] = Outcome(
                earlier.loads + outcome.loads,
                earlier.hits + outcome.hits,
                earlier.seconds + outcome.seconds,
            )


def group_name(path: str) -> str:
    """``zeo_fs-n1000-c2 read`` for a run's trace; the file's name for any other."""
    name = os.path.basename(path)
    match = _RUN_TRACE.match(name)
    return f"{match.group('group')} {match.group('stage')}" if match else name


def find_traces(paths: Sequence[str]) -> list[tuple[str, bool]]:
    """(path, found in a directory) for the files named and the *.trace files in directories."""
    found: list[tuple[str, bool]] = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(name for name in os.listdir(path) if name.endswith(".trace"))
            found.extend((os.path.join(path, name), True) for name in names)
        elif os.path.lexists(path):
            found.append((path, False))  # read_trace refuses what is no regular file
        else:
            raise UsageError(f"{path}: no such trace file or directory")
    if not found:
        raise UsageError(f"no *.trace files in {', '.join(paths)}")
    return found


#: The largest cache size simulated, in bytes.
MAX_SIZE_BYTES = 64 << 30


def _byte_size(part: str, at_most: int) -> int:
    """``512KB`` -> bytes (KB, MB, GB are powers of 1024, as ZConfig's byte-size)."""
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([KMG]?)B?\s*", part, re.IGNORECASE)
    if not match:
        raise argparse.ArgumentTypeError(
            f"{part.strip()[:40]!r} is not a size such as 512KB or 20MB"
        )
    factor = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2).upper()]
    value = float(match.group(1)) * factor  # inf for hundreds of digits
    if value > at_most:
        raise argparse.ArgumentTypeError(f"{part.strip()[:40]!r}: at most {at_most >> 30}GB")
    return int(value)


def parse_max_trace_size(text: str) -> int:
    """``--max-trace-size 2GB`` -> bytes: at least 1KB, at most 64GB."""
    size = _byte_size(text, MAX_MAX_BYTES)
    if size < 1 << 10:
        raise argparse.ArgumentTypeError(f"{text.strip()[:40]!r}: at least 1KB")
    return size


def parse_sizes(text: str) -> list[int]:
    """``64KB,1MB,20MB`` -> bytes (KB, MB, GB are powers of 1024, as ZConfig's byte-size)."""
    sizes = []
    for part in text.split(","):
        size = _byte_size(part, MAX_SIZE_BYTES)
        if size < MIN_SIZE_BYTES:
            raise argparse.ArgumentTypeError(
                f"{part.strip()!r} is too small to simulate: a cache needs at least "
                f"{MIN_SIZE_BYTES >> 10}KB"
            )
        sizes.append(size)
    return sizes


def parse_policies(text: str) -> list[str]:
    """``zeo,lru`` -> ["zeo", "lru"], each a known policy, in the order given."""
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in POLICIES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"{', '.join(unknown) or repr(text)}: choose from {', '.join(POLICIES)}"
        )
    return list(dict.fromkeys(names))
