"""Time maintenance operations on every database of a configuration (``zodbshootout maintain``).

A mode on run.skeleton (servers, refusals, Ctrl-C and SIGTERM, a save after
every database).  For each database and, with ``--sizes``, each size in
turn (the database filled up to it first, untimed, by :mod:`.fill`), each
operation runs in a new process of its own (:mod:`.child`), so that the
peak memory it reports is that operation's; an embedded ZEO server's peak
over the same time is read from /proc (:mod:`.memory`).  One plain record
per database, size and operation goes to ``RunResult.maintenance``
(zodbshootout.results.maintenance reads it back).
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any

from zodbshootout.children import child_environment
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.database.open import open_database
from zodbshootout.database.state import refuse_foreign_data
from zodbshootout.errors import CellError
from zodbshootout.maintenance import memory
from zodbshootout.maintenance.fill import FillShape, fill, refill
from zodbshootout.maintenance.operations import PACKS, WARM_CACHE, not_applicable
from zodbshootout.results.record import Failure, RunResult
from zodbshootout.run.skeleton import OnePassRunner
from zodbshootout.storages.servers import EmbeddedServers
from zodbshootout.workload.root import ForeignDataError

MAINTAIN_PHASE = "maintain"


@dataclass(frozen=True)
class MaintainOptions:
    """What a maintain run does (validated by the CLI)."""

    operations: tuple[str, ...] = ("pack",)
    sizes: tuple[int, ...] = ()  # fill to each in turn; () measures the databases as they are
    shape: FillShape = field(default_factory=FillShape)
    batch: int = 10_000
    timeout_seconds: float = 3600.0  # per operation
    #: pack-under-load: the foreground's measured seconds (None: from the pack's time alone).
    load_seconds: float | None = None
    #: first-transaction-warm: the objects loaded into the persistent cache (None: all).
    cache_objects: int | None = None


class MaintainRunner(OnePassRunner[MaintainOptions]):
    """Times each operation on each database (and size); see the module doc."""

    phase = MAINTAIN_PHASE

    def planned(self, config: LoadedConfig, options: MaintainOptions) -> RunResult:
        result = RunResult.one_pass(
            config.names, list(options.sizes) or [1], phases=(MAINTAIN_PHASE,)
        )
        result.metadata["maintain"] = {
            "operations": list(options.operations),
            "sizes": list(options.sizes),
            "shape": asdict(options.shape),
        }
        return result

    def measure(self, servers: EmbeddedServers) -> None:
        self.measure_each(partial(self._database, servers))

    def fail_unsettled(self, name: str, reason: str) -> None:
        # Not said now: the table's notes list the failures.
        self.result.failures.append(Failure(name, 1, 1, (self.phase,), reason))
        if not any(record["database"] == name for record in self.result.maintenance):
            self.result.setup_failed.append(name)

    def _database(self, servers: EmbeddedServers, name: str) -> bool:
        addresses = servers.addresses(name)
        packed: dict[str, Any] = {}  # the packs so far at this size, by operation
        for size in self.options.sizes or (None,):
            if size is not None:
                if packed:  # each size starts from what a fill of that size leaves
                    self._refill(name, addresses, packed)
                self._fill(name, addresses, size)
            packed = {}
            for operation in self.options.operations:
                applies = not not_applicable(operation, self.config.databases[name])
                if operation in PACKS and packed and applies:
                    self._refill(name, addresses, packed)
                record = self._measured(servers, name, operation, packed)
                record["objects"] = size if size is not None else record.get("objects")
                if operation in PACKS and record["seconds"] is not None:
                    packed[operation] = record
                self.result.maintenance.append(record)
                if record["seconds"] is not None:
                    objects = record["objects"] or 0
                    self.say(
                        f"{name}: {operation} at {objects:,} objects: {record['seconds']:.2f} s"
                    )
        return True

    def _measured(
        self, servers: EmbeddedServers, name: str, operation: str, packed: dict[str, Any]
    ) -> dict[str, Any]:
        """One operation's record (under load: with the foreground's phases)."""
        addresses, pids = servers.addresses(name), servers.pids(name)
        if operation != "pack-under-load" or not_applicable(operation, self.config.databases[name]):
            record = self._operation(name, addresses, pids, operation)
            record.pop("wall", None)  # (only a pack under load reads its wall clock)
            return record
        from zodbshootout.maintenance.load import load_options, pack_under_load

        alone = packed.get("pack", {}).get("seconds")
        size_bytes = self.options.shape.object_size_bytes
        options = load_options(alone or 2.0, size_bytes, self.options.load_seconds)
        record, phases = pack_under_load(
            self.config, servers, name, options,
            partial(self._operation, name, addresses, pids, "pack"), self.say,
        )  # fmt: skip
        record["operation"] = operation
        record["load"] = {**phases, "alone_seconds": alone, "workload": options.plan.workload.name}
        return record

    def _refill(self, name: str, addresses: list[tuple[str, int]], packed: dict[str, Any]) -> None:
        """The history (and garbage) the earlier packs removed, written again (untimed).

        The garbage only after a pack that collected it (not after pack-nogc alone).
        """
        garbage = any(operation != "pack-nogc" for operation in packed)
        self.say(f"{name}: writing the history again for the next pack (untimed)")
        db = open_database(self.config.source, name, addresses, client_label="fill")
        try:
            refill(db, self.options.shape, self.options.batch, garbage)
        finally:
            db.close()

    def _fill(self, name: str, addresses: list[tuple[str, int]], size: int) -> None:
        """*name* filled up to *size* objects, untimed, in this process."""
        self.say(f"{name}: filling to {size:,} objects (untimed)")
        db = open_database(self.config.source, name, addresses, client_label="fill")
        try:
            refuse_foreign_data(db)
            fill(db, size, self.options.shape, self.options.batch)
        finally:
            db.close()

    def _operation(
        self,
        name: str,
        addresses: list[tuple[str, int]],
        pids: list[int],
        operation: str,
        go: threading.Event | None = None,
    ) -> dict[str, Any]:
        record: dict[str, Any] = {"database": name, "operation": operation, "seconds": None}
        record["objects"] = None
        reason = not_applicable(operation, self.config.databases[name])
        if reason is not None:
            return {**record, "reason": f"not applicable: {reason}"}
        request = {
            "source": asdict(self.config.source),
            "database": name,
            "addresses": addresses,
            "operation": operation,
        }
        if operation == "first-transaction-warm":  # its cache filled first, untimed
            warming = {
                **request,
                "operation": WARM_CACHE,
                "cache_objects": self.options.cache_objects,
            }
            warmed = run_child(warming, self.options.timeout_seconds)
            if "warmed" not in warmed:
                return {**record, "reason": f"filling its cache: {warmed.get('error', warmed)}"}
            record["cache_warmed"] = warmed["warmed"]
        for pid in pids:
            memory.reset_peak(pid)
        reply = run_child(request, self.options.timeout_seconds, go)
        if "refused" in reply:
            raise ForeignDataError(reply["refused"])
        if "error" in reply:
            return {**record, "reason": reply["error"]}
        peaks = [memory.peak_rss_bytes(pid) for pid in pids]
        filled = reply.pop("filled", 0)
        known = [peak for peak in peaks if peak is not None]
        server_peak = max(known) if known and len(known) == len(peaks) else None
        record.update(reply, objects=filled, server_peak_rss_bytes=server_peak)
        return record


def run_child(
    request: dict[str, Any], timeout_seconds: float, go: threading.Event | None = None
) -> dict[str, Any]:
    """Run one operation in a new interpreter (:mod:`.child`); its reply.

    With *go*, the child prepares (starts, opens, counts) and starts the
    timed region only once *go* is set.
    """
    child = subprocess.Popen(
        [sys.executable, "-m", "zodbshootout.maintenance.child"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=child_environment(),
    )  # fmt: skip
    assert child.stdin is not None
    assert child.stdout is not None
    try:
        child.stdin.write(json.dumps({**request, "wait": go is not None}) + "\n")
        child.stdin.flush()
        if go is not None:
            said = child.stdout.readline()
            if '"ready"' in said:
                go.wait(timeout_seconds)
                child.stdin.write("go\n")
                child.stdin.flush()
        out, err = child.communicate(timeout=timeout_seconds)
    except subprocess.TimeoutExpired:
        child.kill()
        child.communicate()
        return {"error": f"it took longer than {timeout_seconds:g} s (--timeout)"}
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
    lines = out.strip().splitlines()
    if child.returncode != 0 or not lines:
        tail = (err.strip().splitlines() or ["no output"])[-1]
        raise CellError(f"the operation's process ended with code {child.returncode}: {tail}")
    reply: dict[str, Any] = json.loads(lines[-1])
    return reply
