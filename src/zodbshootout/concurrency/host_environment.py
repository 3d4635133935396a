"""Each ``--hosts`` host's environment and round-trip times, read once before a run.

One gateway per host runs host_worker.describe_host there: host name,
network namespace, CPU, Python and package versions, load, and the
round-trip time to each database (the ``-v`` latency probe, from that
host).  The runner records them in the result's ``hosts`` metadata, so
that runs at different round-trip times can be compared, and warns when
the hosts differ in what makes numbers comparable.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from zodbshootout.concurrency import host_worker
from zodbshootout.concurrency.hosts import HostError, load_execnet, unreachable
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import ConfigSource
from zodbshootout.results.metadata import comparable_facts

Addresses = list[tuple[str, int]]


def describe_hosts(
    hosts: tuple[HostSpec, ...],
    source: ConfigSource,
    databases: dict[str, Addresses],
    timeout_seconds: float,
) -> dict[str, dict[str, Any]]:
    """Every host's facts, by host name; a HostError names the first unreachable host."""
    request = {
        "source": dataclasses.asdict(source),
        "databases": {name: [list(a) for a in addresses] for name, addresses in databases.items()},
    }
    group = load_execnet().Group()
    try:
        with ThreadPoolExecutor(max_workers=len(hosts)) as pool:
            futures = [
                pool.submit(_describe, group, host, request, timeout_seconds) for host in hosts
            ]
            facts = [future.result() for future in futures]
    finally:
        group.terminate(timeout=3)
    described = {}
    for host, found in zip(hosts, facts, strict=True):
        described[host.name] = {"share": host.share, "python": host.python, **found}
    return described


def _describe(
    group: Any, host: HostSpec, request: dict[str, Any], timeout: float
) -> dict[str, Any]:
    execnet = load_execnet()
    try:
        gateway = group.makegateway(host.gateway_spec())
        channel = gateway.remote_exec(host_worker)
        channel.send(("describe", request))
        facts: dict[str, Any] = channel.receive(timeout)
    except (OSError, EOFError, execnet.HostNotFound) as e:
        raise unreachable(host, e) from None
    except (execnet.RemoteError, execnet.TimeoutError) as e:
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise HostError(f"host {host.name}: could not describe it: {lines[-1]}") from None
    return facts


def differing_hosts(described: dict[str, dict[str, Any]]) -> list[str]:
    """A warning per comparable fact (CPU, Python, ZODB, ...) on which the hosts differ."""
    facts = {
        name: comparable_facts({"environment": host.get("environment") or {}})
        for name, host in described.items()
    }
    names = list(facts)
    warnings = []
    for fact in facts[names[0]] if names else ():
        values = {name: facts[name].get(fact) for name in names}
        if len(set(map(str, values.values()))) > 1:
            listed = ", ".join(f"{name}: {value}" for name, value in values.items())
            warnings.append(f"the hosts differ in {fact} ({listed}): their workers' numbers differ")
    return warnings


def latency_lines(described: dict[str, dict[str, Any]]) -> list[str]:
    """``host → database: round trip N µs`` for each host and database (for -v)."""
    lines = []
    for name, host in described.items():
        for database, seconds in host.get("latency_seconds", {}).items():
            lines.append(f"host {name} → {database}: round trip {seconds * 1e6:.0f} µs")
        for database, error in host.get("latency_errors", {}).items():
            lines.append(f"host {name} → {database}: round trip unknown ({error})")
    return lines
