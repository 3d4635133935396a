"""Real servers through the delaying proxy, opened with the tool's own code; the RTT it sees.

ZEO (the tool's embedded server, and a runzeo of the test's named in a
``<zeoclient>`` section), RelStorage on a PostgreSQL database of the
test's own, and memcached: each is written and read through its proxy,
and the round trip the tool measures at the protocol level (a ZEO ping, a
``SELECT 1``, a memcached ``version``) is checked at 2 ms and 10 ms against the
asked value and against an independent ping of an echo server behind the
same proxy process.
"""

from __future__ import annotations

import pytest
import transaction
from persistent.mapping import PersistentMapping

from zodbshootout.config.loader import load_config
from zodbshootout.database.open import open_database
from zodbshootout.network.delayed import DelayedDatabase
from zodbshootout.network.delays import RttStep
from zodbshootout.network.process import ProxyProcess
from zodbshootout.network.routes import find_servers, rewrite
from zodbshootout.network.rtt import measure_round_trips
from zodbshootout.storages.servers import embedded_servers

from support.local import memcached, runzeo
from support.tcp import EchoServer, ping

#: Each holds an RTT through the proxy to 0.2 ms: the suite's load adds more (the
#: CI pre-checks' and a loaded profile run's did, to 0.23 ms), so all run alone.
pytestmark = [pytest.mark.slow, pytest.mark.alone]

EMBEDDED = """
<zodb zeo>
  <embeddedzeo>
    <filestorage>
      path $(ZODBSHOOTOUT_DATA)/zeo.fs
    </filestorage>
  </embeddedzeo>
</zodb>
"""


def tolerance(asked_seconds: float) -> float:
    """The issue's bar: within 10 % or 0.2 ms, whichever is larger."""
    return max(0.1 * asked_seconds, 0.2e-3)


def _write_and_read(source, name: str, embedded) -> None:
    """Objects committed through one client and read back through a fresh one."""
    payload = {str(n): bytes(range(256)) * (n + 1) for n in range(50)}
    db = open_database(source, name, list(embedded), client_label="writer")
    try:
        with db.transaction() as conn:
            conn.root()["rtt-test"] = PersistentMapping(payload)
    finally:
        db.close()
    db = open_database(source, name, list(embedded), client_label="reader")
    try:
        conn = db.open()
        assert dict(conn.root()["rtt-test"]) == payload
        conn.close()
        transaction.abort()
    finally:
        db.close()


#: Alternated measurements at least and at most (see _check_round_trips).
LEAST_ROUNDS, MOST_ROUNDS = 3, 12


def _check_round_trips(config, name: str, embedded, server: str, asked_rtts=(2e-3, 10e-3)) -> None:
    """At each of *asked_rtts*: the tool's protocol-level RTT and an echo ping, one proxy.

    Each side is the best of its measurements, alternated with the direct
    ones, so that a burst of load on the machine weighs on neither alone:
    load only ever adds time, and the delay is a floor, so the best converges
    on it.  On a busy machine more rounds are taken (until the figures agree
    or MOST_ROUNDS); a proxy that delays wrongly, or sends early, stays wrong
    however many.
    """
    servers = find_servers(config, name, embedded)
    with EchoServer() as echo, ProxyProcess([*servers.targets, echo.address]) as proxy:
        routes = dict(zip(servers.targets, proxy.listening, strict=False))
        proxied = rewrite(config.source, servers, routes)
        echo_through = proxy.route(echo.address)
        for asked in asked_rtts:
            proxy.set_rtt(RttStep(asked))
            seen: dict[str, list[float]] = {"tool": [], "base": [], "ping": [], "echo": []}
            for rounds in range(1, MOST_ROUNDS + 1):
                seen["base"].append(measure_round_trips(config.source, name, embedded)[server])
                seen["tool"].append(
                    measure_round_trips(proxied.source, name, proxied.embedded)[server]
                )
                seen["echo"].append(ping(echo.address, 10))
                seen["ping"].append(ping(echo_through, 10 if asked < 5e-3 else 5))
                tool_added = min(seen["tool"]) - min(seen["base"])
                ping_added = min(seen["ping"]) - min(seen["echo"])
                agree = [abs(ping_added - asked), abs(tool_added - ping_added)]
                if rounds >= LEAST_ROUNDS and max(agree) <= tolerance(asked):
                    break
            # The ping is the yardstick of what the proxy adds; the tool's probe
            # agrees with it within the bar, not with the asked figure: its
            # client and server wake once more each after every idle gap (on a
            # quiet 2-core VM, 2.21-2.28 ms against the ping's 2.12 at 2 ms).
            assert abs(ping_added - asked) <= tolerance(asked), (server, asked, ping_added)
            agreed = abs(tool_added - ping_added)
            assert agreed <= tolerance(asked), (server, tool_added, ping_added)
            assert tool_added >= asked - tolerance(asked), (server, asked, tool_added)


@pytest.mark.zeo
def test_the_embedded_zeo_server_through_the_proxy(write_config, data_dir):
    config = load_config(write_config(EMBEDDED), data_dir)
    with embedded_servers(config, ["zeo"]) as servers:
        addresses = servers.addresses("zeo")
        with DelayedDatabase(config, "zeo", addresses, RttStep(2e-3)) as delayed:
            assert delayed.proxied.embedded != addresses
            assert delayed.proxied.source == config.source  # nothing in the text names it
            _write_and_read(delayed.proxied.source, "zeo", delayed.proxied.embedded)
            assert list(delayed.measure()) == ["zeo"]
        _check_round_trips(config, "zeo", addresses, "zeo")


@pytest.mark.zeo
def test_a_zeo_server_named_in_the_text_through_the_proxy(write_config, data_dir, tmp_path):
    with runzeo(tmp_path / "data.fs") as (_process, port):
        text = f"<zodb zeo>\n  <zeoclient>\n    server 127.0.0.1:{port}\n  </zeoclient>\n</zodb>\n"
        config = load_config(write_config(text), data_dir)
        with DelayedDatabase(config, "zeo") as delayed:
            assert f"127.0.0.1:{port}" not in delayed.proxied.source.text
            _write_and_read(delayed.proxied.source, "zeo", [])


@pytest.mark.postgresql
def test_relstorage_on_postgresql_through_the_proxy(write_config, data_dir, postgresql_dsn):
    text = (
        "%import relstorage\n<zodb pg>\n  <relstorage>\n    keep-history false\n"
        f"    <postgresql>\n      driver psycopg2\n      dsn {postgresql_dsn}\n"
        "    </postgresql>\n  </relstorage>\n</zodb>\n"
    )
    config = load_config(write_config(text), data_dir)
    with DelayedDatabase(config, "pg") as delayed:
        _write_and_read(delayed.proxied.source, "pg", [])
    _check_round_trips(config, "pg", [], "postgresql")


@pytest.mark.memcached
def test_memcached_through_the_proxy(write_config, data_dir):
    pytest.importorskip("pylibmc")
    with memcached() as port:
        text = (
            "%import relstorage\n<zodb mc>\n  <relstorage>\n"
            f"    cache-servers 127.0.0.1:{port}\n"
            "    cache-module-name relstorage.pylibmc_wrapper\n"
            "    <sqlite3>\n      driver sqlite3\n      data-dir $(ZODBSHOOTOUT_DATA)/mc\n"
            "    </sqlite3>\n  </relstorage>\n</zodb>\n"
        )
        config = load_config(write_config(text), data_dir)
        with DelayedDatabase(config, "mc", step=RttStep(2e-3)) as delayed:
            _write_and_read(delayed.proxied.source, "mc", [])
            seen, base = [], []
            for _ in range(3):  # alternated, the best of each (see _check_round_trips)
                base.append(measure_round_trips(config.source, "mc"))
                seen.append(delayed.measure())
        assert set(seen[0]) == {"sqlite", "memcached"}
        # SQLite is a file: no proxy in its way.
        assert min(s["sqlite"] for s in seen) < min(b["sqlite"] for b in base) + 1e-3
        # memcached's figure against an echo ping through the same proxy, as for
        # the other servers (CI once saw 2.22 ms added at 2 ms in 5 fixed rounds).
        _check_round_trips(config, "mc", [], "memcached", asked_rtts=(2e-3,))
