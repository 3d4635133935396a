"""An ``--rtt`` ladder in a run: each database's rows, their proxies, the RTTs they measured.

A database with network servers becomes one row per step, ``NAME@STEP``
(``zeo_fs@2ms``, see results.rtt), measured like any other database (a
column of the classic table, a mix record) with its workers opening the
configuration rewritten through a proxy of its own (network.delayed) that
adds the step's round trip.  One proxy per row, each at its step's delay
for the whole run, lets the classic run's rounds interleave the steps (a
burst of load on the machine weighs on every step alike).  A database
without a server (FileStorage, SQLite) keeps its one row, measured once.

The round trip each row's server answers in is measured through its proxy
before the row is measured (the best of a few, alternated with the direct
one, since load only ever adds time), and recorded in
``metadata["rtt"]["rows"]``.  Every proxy stops with the run (:meth:`stop`,
called on every way out of it; a proxy also ends by itself when the run's
process dies).
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from zodbshootout.concurrency.host_environment import describe_hosts
from zodbshootout.concurrency.hosts import HostError
from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import ConfigSource, LoadedConfig
from zodbshootout.errors import CellError
from zodbshootout.network.delayed import DelayedDatabase, plan_ladder
from zodbshootout.network.delays import RttStep
from zodbshootout.network.routes import DatabaseServers
from zodbshootout.network.rtt import measure_round_trips
from zodbshootout.results.rtt import row_name

Addresses = list[tuple[str, int]]

#: Alternated measurements of the direct and the proxied round trips, the best of each
#: kept: at least LEAST_ROUNDS, and up to MOST_ROUNDS while a step's best is still
#: further than SETTLED (10 %, or 0.2 ms) from its floor, the direct round trip + the step.
LEAST_ROUNDS, MOST_ROUNDS = 3, 10
SETTLED_FRACTION, SETTLED_SECONDS = 0.1, 0.2e-3
#: With --hosts, each round starts a probe on every host: fewer rounds at most.
MOST_HOST_ROUNDS = 5
#: How long a worker host may take to describe its round trips (--hosts).
HOST_TIMEOUT_SECONDS = 120.0


@dataclass(frozen=True)
class Row:
    """One row of a run: the name it is recorded as, its database's section, its step."""

    name: str
    database: str
    step: RttStep | None  # None: a database without servers, measured once


@dataclass(frozen=True)
class Route:
    """What a row's workers open: the configuration (maybe rewritten) and embedded addresses."""

    source: ConfigSource
    addresses: Addresses
    #: The runner's own way to the database (the original): untimed work goes there.
    setup: tuple[ConfigSource, tuple[tuple[str, int], ...]] | None = None


class Ladder:
    """The rows of a run over *names* and, once started, their proxies.

    Without steps every database is one row of its own name and nothing is
    started.  *hosts*: the --hosts worker hosts; when one is another
    machine, a row's proxies run on each host that runs workers (this one
    too when it does), all on the same ports, and its round trips are
    measured from each of them.
    """

    def __init__(
        self,
        config: LoadedConfig,
        names: Sequence[str],
        steps: Sequence[RttStep] = (),
        hosts: Sequence[HostSpec] = (),
    ) -> None:
        self.config = config
        self.steps = tuple(steps)
        #: Where the proxies run: every worker host, once each, when one is another
        #: machine; none: this machine only.
        self.hosts: tuple[HostSpec, ...] = ()
        self.plans: dict[str, DatabaseServers] = {}
        if self.steps:
            self.plans = plan_ladder(config, names)
            if any(not host.is_local for host in hosts):
                self.hosts = tuple({host.name: host for host in hosts}.values())
        self.rows: dict[str, list[Row]] = {name: self._rows(name) for name in names}
        self._delayed: dict[str, DelayedDatabase] = {}
        self.record: dict[str, Any] = {}
        if self.steps:
            self.record = {
                "ladder": [
                    {"rtt_seconds": s.rtt_seconds, "jitter_seconds": s.jitter_seconds}
                    for s in self.steps
                ],
                "rows": {},
                "unproxied": [n for n in names if not self.delays(n)],
                "proxy_host": self.hosts[0].name if self.hosts else None,
                "proxy_hosts": [host.name for host in self.hosts],
            }

    def delays(self, name: str) -> bool:
        """True when database *name* has servers a proxy stands before (or refuses)."""
        plan = self.plans.get(name)
        if plan is None:
            return False
        return any(link.addresses or link.embedded or link.unproxyable for link in plan.links)

    def _rows(self, name: str) -> list[Row]:
        if not self.delays(name):
            return [Row(name, name, None)]
        return [Row(row_name(name, s.rtt_seconds, s.jitter_seconds), name, s) for s in self.steps]

    @property
    def names(self) -> list[str]:
        """Every row's name, database by database in the configuration's order."""
        return [row.name for rows in self.rows.values() for row in rows]

    def database_of(self, row: str) -> str:
        """The database (configuration section) *row* measures; a name not a row is its own."""
        found = (r.database for rows in self.rows.values() for r in rows if r.name == row)
        return next(found, row)

    def start(self, name: str, addresses: Addresses) -> dict[str, Route]:
        """Database *name*'s rows and what each opens; its proxies started and measured.

        *addresses*: its embedded ZEO servers' (as the run started them).  A
        database refused by the proxy, or whose round trip can't be
        measured, raises a CellError (the database's failure).
        """
        rows = self.rows[name]
        if rows[0].step is None:
            return {name: Route(self.config.source, list(addresses))}
        routes = {}
        for row in rows:
            assert row.step is not None
            delayed = DelayedDatabase(self.config, name, addresses, row.step, self.hosts)
            self._delayed[row.name] = delayed
        for row in rows:
            proxied = self._delayed[row.name].proxied
            setup = (self.config.source, tuple(addresses))
            routes[row.name] = Route(proxied.source, list(proxied.embedded), setup)
        if not self.hosts:
            self._measure(name, addresses)
        else:
            self._measure_on_host(name, addresses, routes)
        return routes

    def _measure_on_host(self, name: str, addresses: Addresses, routes: dict[str, Route]) -> None:
        """With --hosts: each row's round trip as each worker host sees it, through its proxy.

        The proxies listen on each host's loopback, so the probe runs there
        (the hosts' description, concurrency.host_environment), directly and
        through each row's proxies, on every host at once: the best of each
        kept, in rounds until every step has settled near its floor (as in
        :meth:`_measure`), at most MOST_HOST_ROUNDS.  The row's figure is
        its slowest host's (each host's is recorded too with several).
        """
        rows = self.rows[name]
        base: dict[str, dict[str, float]] = {}
        seen: dict[str, dict[str, dict[str, float]]] = {row.name: {} for row in rows}
        for _round in range(MOST_HOST_ROUNDS):
            for host, found in _round_trips_on(self.hosts, self.config.source, name, addresses):
                _keep_best(base.setdefault(host, {}), found)
            for row in rows:
                route = routes[row.name]
                for host, found in _round_trips_on(self.hosts, route.source, name, route.addresses):
                    _keep_best(seen[row.name].setdefault(host, {}), found)
            if all(_settled(row, base[h], seen[row.name][h]) for row in rows for h in base):
                break
        for row in rows:
            proxied = seen[row.name]
            slowest = max(proxied, key=lambda host: proxied[host][name])
            record = self._row_record(row, base[slowest], proxied[slowest])
            if len(self.hosts) > 1:
                record["hosts"] = {
                    host: {"base_seconds": base[host], "proxied_seconds": proxied[host]}
                    for host in proxied
                }
            self.record["rows"][row.name] = record

    def _measure(self, name: str, addresses: Addresses) -> None:
        """Each row's round trip through its proxy, the best of a few, beside the direct one.

        Load on the machine only ever adds time (a late wake-up of the
        proxy's or the client's thread), so the best of several measurements
        converges on what the network and the proxy add; on a busy machine
        more are taken (see MOST_ROUNDS).
        """
        base: dict[str, float] = {}
        seen: dict[str, dict[str, float]] = {}
        for rounds in range(1, MOST_ROUNDS + 1):
            _keep_best(base, measure_round_trips(self.config.source, name, addresses))
            for row in self.rows[name]:
                _keep_best(seen.setdefault(row.name, {}), self._delayed[row.name].measure())
            if rounds >= LEAST_ROUNDS and all(
                _settled(row, base, seen[row.name]) for row in self.rows[name]
            ):
                break
        for row in self.rows[name]:
            self.record["rows"][row.name] = self._row_record(row, base, seen[row.name])

    def _row_record(
        self, row: Row, base: dict[str, float], proxied: dict[str, float]
    ) -> dict[str, Any]:
        assert row.step is not None
        servers = list(proxied or base)
        return {
            "database": row.database,
            "asked_seconds": row.step.rtt_seconds,
            "jitter_seconds": row.step.jitter_seconds,
            "server": servers[0] if servers else None,
            "base_seconds": dict(base),
            "proxied_seconds": dict(proxied),
            "proxy_pid": self._delayed[row.name].pid,
        }

    def stop(self) -> None:
        """Stop every proxy started (each waited for; a failure to stop one stops no other)."""
        for delayed in self._delayed.values():
            with contextlib.suppress(Exception):
                delayed.stop()


def _round_trips_on(
    hosts: Sequence[HostSpec], source: ConfigSource, name: str, embedded: Addresses
) -> list[tuple[str, dict[str, float]]]:
    """(host, {database: seconds}): the round trip to *name*'s server from each of *hosts*."""
    try:
        facts = describe_hosts(tuple(hosts), source, {name: embedded}, HOST_TIMEOUT_SECONDS)
    except HostError as e:
        raise CellError(f"the round trip could not be measured: {e}") from None
    found = []
    for host, described in facts.items():
        if name not in described.get("latency_seconds", {}):
            why = described.get("latency_errors", {}).get(name, "no latency probe")
            raise CellError(f"the round trip from {host} could not be measured: {why}")
        found.append((host, {name: float(described["latency_seconds"][name])}))
    return found


def _settled(row: Row, base: dict[str, float], seen: dict[str, float]) -> bool:
    """True when every server's best round trip through *row*'s proxy is near its floor.

    Near either way: a direct round trip that load made slower than the
    proxied one (a late wake-up in every one of its pings) is no floor yet.
    """
    assert row.step is not None
    asked = row.step.rtt_seconds
    slack = max(SETTLED_FRACTION * asked, SETTLED_SECONDS)
    return all(
        abs(seconds - base.get(server, 0.0) - asked) <= slack for server, seconds in seen.items()
    )


def _keep_best(best: dict[str, float], seen: dict[str, float]) -> None:
    for server, seconds in seen.items():
        best[server] = min(seconds, best.get(server, seconds))
