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
    started them.  *hosts*: the worker hosts (``--hosts``; none: this
    machine): a proxy runs on each, every one listening on the same ports
    of its own loopback, so that the one proxied source is valid on each
    host (and there only).  A database whose servers a proxy can't reach is
    a CellError.
    """

    def __init__(
        self,
        config: LoadedConfig,
        name: str,
        embedded: Sequence[Address] = (),
        step: RttStep = NO_DELAY,
        hosts: Sequence[HostSpec] = (),
    ) -> None:
        self.name = name
        self.servers = find_servers(config, name, embedded)
        refusal = self.servers.refusal()
        if refusal:
            raise CellError(refusal)
        if any(link.embedded and not link.addresses for link in self.servers.links):
            raise ValueError(f"{name}: its embedded ZEO servers' addresses are needed")
        self._original = ProxiedSource(config.source, list(embedded))
        self._proxies: list[ProxyProcess] = []
        self._proxied: ProxiedSource | None = None
        if self.servers.targets:
            self._proxies = _start_proxies(self.servers.targets, step, list(hosts) or [None])

    @property
    def proxied(self) -> ProxiedSource:
        """The source and embedded addresses that reach the servers through the proxy.

        Waits for the proxy to listen; the original when there is no server.
        """
        if not self._proxies:
            return self._original
        if self._proxied is None:
            routes = dict(zip(self.servers.targets, self._proxies[0].listening, strict=True))
            self._proxied = rewrite(self._original.source, self.servers, routes)
        return self._proxied

    @property
    def pid(self) -> int | None:
        """The (first) proxy process's id (on its host), None when there is no server to delay."""
        return self._proxies[0].pid if self._proxies else None

    @property
    def step(self) -> RttStep:
        return self._proxies[0].step if self._proxies else NO_DELAY

    def set_rtt(self, step: RttStep) -> None:
        """Add *step* to every round trip from now on (connections open stay open)."""
        for proxy in self._proxies:
            proxy.set_rtt(step)

    def measure(self) -> dict[str, float]:
        """Seconds per round trip each server answers in now, through the proxy."""
        proxied = self.proxied
        return measure_round_trips(proxied.source, self.name, proxied.embedded)

    def stop(self) -> None:
        for proxy in self._proxies:
            proxy.stop()

    def __enter__(self) -> DelayedDatabase:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()


#: Tries at a set of ports free on every worker host (each try: the first host's pick).
PORT_TRIES = 3


def _start_proxies(
    targets: Sequence[Address], step: RttStep, hosts: Sequence[HostSpec | None]
) -> list[ProxyProcess]:
    """A proxy per host, all on the ports the first one's kernel picked.

    When a port is taken on another host, that proxy fails to listen: every
    proxy of the try is stopped and the next try starts from fresh ports.
    The last try's failure is the CellError.
    """
    for attempt in range(PORT_TRIES):
        first = ProxyProcess(targets, step, proxy_command(hosts[0]))
        proxies = [first]
        try:
            ports = [port for _host, port in first.listening]
            proxies += [ProxyProcess(targets, step, proxy_command(h), ports) for h in hosts[1:]]
            for host, proxy in zip(hosts[1:], proxies[1:], strict=True):
                try:
                    proxy.listening  # noqa: B018 -- each one's start waited for
                except CellError as e:
                    where = host.name if host is not None else "this machine"
                    raise CellError(f"on {where}, ports {ports}: {e}") from None
            return proxies
        except CellError:
            for proxy in proxies:
                proxy.stop()
            if attempt == PORT_TRIES - 1 or len(proxies) == 1:
                raise
        except BaseException:
            for proxy in proxies:
                proxy.stop()
            raise
    raise AssertionError("unreachable")
