"""What an ``--rtt`` ladder asks of the network: its plan, and a database behind proxies.

The runner's side, in three calls:

- :func:`plan_ladder` before anything runs: each database's servers, a
  UsageError when no database has one ("the ladder has nothing to delay");
- :class:`DelayedDatabase` per database (and per worker host): starts a
  proxy process for its servers and gives :attr:`~DelayedDatabase.proxied`,
  the configuration source and embedded ZEO addresses its workers open
  instead of the originals;
- per step, :meth:`DelayedDatabase.set_rtt` then :meth:`DelayedDatabase.measure`
  (the round trip each server now answers in), and :meth:`DelayedDatabase.stop`
  at the end (the proxy also stops by itself if the runner dies).

The base round trip (no proxy) is :func:`zodbshootout.network.rtt.measure_round_trips`
on the original source.
"""

from __future__ import annotations

from collections.abc import Sequence

from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import LoadedConfig
from zodbshootout.errors import CellError, UsageError
from zodbshootout.network.delays import NO_DELAY, RttStep
from zodbshootout.network.process import ProxyProcess, proxy_command
from zodbshootout.network.routes import (
    NOTHING_TO_DELAY,
    DatabaseServers,
    ProxiedSource,
    find_servers,
    rewrite,
)
from zodbshootout.network.rtt import measure_round_trips

Address = tuple[str, int]


def plan_ladder(config: LoadedConfig, names: Sequence[str]) -> dict[str, DatabaseServers]:
    """The servers of each database *names*; a UsageError when none of them has one.

    A database without servers (FileStorage, SQLite) is the same at every
    step; one with a server a proxy can't reach has its refusal (see
    :meth:`DatabaseServers.refusal`): the runner reports it.
    """
    plans = {name: find_servers(config, name) for name in names}
    if not any(link.addresses or link.embedded for p in plans.values() for link in p.links):
        refusals = [p.refusal() for p in plans.values() if p.refusal()]
        raise UsageError(f"--rtt: {refusals[0] if refusals else NOTHING_TO_DELAY}")
    return plans


class DelayedDatabase:
    """Database *name*'s servers behind a proxy process of the tool's own.

    *embedded*: the addresses of its embedded ZEO servers, as the runner
    started them.  *host*: the worker host the proxy runs on (``--hosts``;
    None: this machine); the proxied source is then valid there only.
    A database whose servers a proxy can't reach is a CellError.
    """

    def __init__(
        self,
        config: LoadedConfig,
        name: str,
        embedded: Sequence[Address] = (),
        step: RttStep = NO_DELAY,
        host: HostSpec | None = None,
    ) -> None:
        self.name = name
        self.servers = find_servers(config, name, embedded)
        refusal = self.servers.refusal()
        if refusal:
            raise CellError(refusal)
        if any(link.embedded and not link.addresses for link in self.servers.links):
            raise ValueError(f"{name}: its embedded ZEO servers' addresses are needed")
        self._original = ProxiedSource(config.source, list(embedded))
        self._proxy: ProxyProcess | None = None
        self._proxied: ProxiedSource | None = None
        if self.servers.targets:
            self._proxy = ProxyProcess(self.servers.targets, step, proxy_command(host))

    @property
    def proxied(self) -> ProxiedSource:
        """The source and embedded addresses that reach the servers through the proxy.

        Waits for the proxy to listen; the original when there is no server.
        """
        if self._proxy is None:
            return self._original
        if self._proxied is None:
            routes = dict(zip(self.servers.targets, self._proxy.listening, strict=True))
            self._proxied = rewrite(self._original.source, self.servers, routes)
        return self._proxied

    @property
    def pid(self) -> int | None:
        """The proxy process's id (on its host), None when there is no server to delay."""
        return self._proxy.pid if self._proxy is not None else None

    @property
    def step(self) -> RttStep:
        return self._proxy.step if self._proxy is not None else NO_DELAY

    def set_rtt(self, step: RttStep) -> None:
        """Add *step* to every round trip from now on (connections open stay open)."""
        if self._proxy is not None:
            self._proxy.set_rtt(step)

    def measure(self) -> dict[str, float]:
        """Seconds per round trip each server answers in now, through the proxy."""
        proxied = self.proxied
        return measure_round_trips(proxied.source, self.name, proxied.embedded)

    def stop(self) -> None:
        if self._proxy is not None:
            self._proxy.stop()

    def __enter__(self) -> DelayedDatabase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()
