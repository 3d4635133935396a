"""``--rtt``: a run's databases measured at each added round trip, through the tool's proxies.

Real runs on the embedded ZEO server (and RelStorage on the machine's
PostgreSQL with ZODBSHOOTOUT_TEST_SERVERS=1) at small N.  The figures are
checked against what explains them independently: the cold read's fitted
slope against the round trips that --work counted (time per transaction ≈
local cost + round trips × RTT), prefetch's and steamin's slopes against
cold's; a mix run's RTTs against the asked ones; and the proxies' processes,
by PID, against the run's end and Ctrl-C.
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from zodbshootout.results.file import load
from zodbshootout.results.rtt import RttFit, classic_fits, stored_fits

from support.inprocess import run_main
from support.processes import session_processes, start_cli, wait_until_session_empty

pytestmark = pytest.mark.slow

ZEO = """
    %import zodbshootout
    <zodb zeo>
      <embeddedzeo>
        <filestorage>
          path $(ZODBSHOOTOUT_DATA)/zeo.fs
        </filestorage>
      </embeddedzeo>
    </zodb>
    <zodb fs>
      <filestorage>
        path $(ZODBSHOOTOUT_DATA)/fs.fs
      </filestorage>
    </zodb>
"""


def tolerance(asked_seconds: float) -> float:
    """The issue's bar for a measured RTT: within 10 % or 0.2 ms, whichever is larger."""
    return max(0.1 * asked_seconds, 0.2e-3)


#: What the protocol-level probe (a ZEO ping, SELECT 1) adds above the proxy's
#: own delay: its client and server each wake once more after every idle gap
#: the delay opens (a quiet 2-core VM: ZEO 2.21-2.28 ms at 2 ms asked, an echo
#: ping through the same proxy 2.12).  The proxy's delay itself is held to the
#: bar against an independent ping in test_delay_proxy and test_rtt_servers.
PROBE_WAKE_UPS_SECONDS = 0.2e-3


def _fits(saved, database: str) -> dict[str, RttFit]:
    return {fit.what: fit for fit in stored_fits(saved.metadata) if fit.database == database}


def _check_ladder_rows(saved, database: str, steps: list[float]) -> None:
    """Each step's row recorded, the RTT it measured within the bar of base + asked."""
    rows = {name: row for name, row in saved.metadata["rtt"]["rows"].items()}
    names = [f"{database}@{step * 1e3:g}ms" for step in steps]
    assert [n for n in saved.databases if n.startswith(f"{database}@")] == names
    for name, asked in zip(names, steps, strict=True):
        row = rows[name]
        assert row["database"] == database
        assert row["asked_seconds"] == pytest.approx(asked)
        server = row["server"]
        added = row["proxied_seconds"][server] - row["base_seconds"][server]
        assert asked - tolerance(asked) <= added, (name, added)
        assert added <= asked + tolerance(asked) + PROBE_WAKE_UPS_SECONDS, (name, added)


def _check_classic_slopes(saved, database: str) -> None:
    """cold's slope: the round trips --work counted (±20 %); prefetch's far less; steamin flat."""
    fits = _fits(saved, database)
    cold, prefetch, steamin = fits["cold"], fits["prefetch"], fits["steamin"]
    # The time grows with the RTT, step by step.
    times = [seconds for _rtt, seconds in cold.points]
    assert times == sorted(times), cold.points
    assert cold.counted is not None
    assert cold.counted >= 50  # N objects, one round trip each
    assert abs(cold.slope - cold.counted) <= 0.2 * cold.counted, (cold.slope, cold.counted)
    assert prefetch.slope < 0.25 * cold.slope, (prefetch.slope, cold.slope)
    assert abs(steamin.slope) < 0.02 * cold.slope, (steamin.slope, cold.slope)
    # What the run stored is what the saved timings give again.
    again = {fit.what: fit for fit in classic_fits(saved) if fit.database == database}
    assert again["cold"].slope == pytest.approx(cold.slope)


@pytest.mark.alone  # the slope within 20 %: the suite's load bends it
@pytest.mark.zeo
def test_a_classic_ladder_on_embedded_zeo(write_config, data_dir, tmp_path):
    config = write_config(ZEO)
    out = tmp_path / "run.json"
    args = ("-n", "50", "-c", "1", "-r", "3", "--work", "cold", "prefetch", "steamin")
    code, stdout, stderr = run_main(config, *args, "--rtt", "0,2,5ms", "-o", str(out), "-q")
    assert code == 0, stderr
    saved = load(str(out))
    _check_ladder_rows(saved, "zeo", [0, 2e-3, 5e-3])
    _check_classic_slopes(saved, "zeo")
    # FileStorage has no server: measured once, under its own name, and it says so.
    assert saved.metadata["rtt"]["unproxied"] == ["fs"]
    assert "fs: no network server, measured once" in stdout
    assert "zeo cold (n=50, c=1): +" in stdout
    assert "--work counted" in stdout
    # The table's columns are the rows.
    header = [cell.strip() for cell in stdout.splitlines()[0].split(",")[1:]]
    assert header == ["zeo@0ms", "zeo@2ms", "zeo@5ms", "fs"]
    # Every proxy stopped with the run.
    pids = [row["proxy_pid"] for row in saved.metadata["rtt"]["rows"].values()]
    assert len(set(pids)) == 3
    assert not [pid for pid in pids if os.path.exists(f"/proc/{pid}")]


@pytest.mark.alone  # the RTT within 0.2 ms: the suite's load adds more
@pytest.mark.postgresql
def test_a_classic_ladder_on_relstorage_postgresql(
    write_config, data_dir, tmp_path, postgresql_dsn
):
    config = write_config(
        "%import relstorage\n<zodb pg>\n  <relstorage>\n    keep-history false\n"
        f"    <postgresql>\n      driver psycopg2\n      dsn {postgresql_dsn}\n"
        "    </postgresql>\n  </relstorage>\n</zodb>\n"
    )
    out = tmp_path / "run.json"
    args = ("-n", "50", "-c", "1", "-r", "3", "--work", "cold", "prefetch", "steamin")
    code, _stdout, stderr = run_main(config, *args, "--rtt", "0,2,5ms", "-o", str(out), "-q")
    assert code == 0, stderr
    saved = load(str(out))
    _check_ladder_rows(saved, "pg", [0, 2e-3, 5e-3])
    _check_classic_slopes(saved, "pg")


@pytest.mark.alone  # the RTT within 0.2 ms: CI's suite once measured 0.205 ms over
@pytest.mark.zeo
def test_a_mix_ladder_at_a_rate_records_the_rtts_it_asked(write_config, data_dir, tmp_path):
    config = write_config(ZEO.split("<zodb fs>")[0])
    out = tmp_path / "mix.json"
    code, stdout, stderr = run_main(
        "mix", config, "--rtt", "0,2ms", "-n", "300", "-c", "2", "-d", "1", "--warmup", "0.2",
        "--rate", "40", "-o", str(out), "-q",
    )  # fmt: skip
    assert code == 0, stderr
    saved = load(str(out))
    _check_ladder_rows(saved, "zeo", [0, 2e-3])
    assert [record["database"] for record in saved.mix] == ["zeo@0ms", "zeo@2ms"]
    # Each operation's fit stands on the RTTs recorded (its slope is timing:
    # one second at 40 transactions per second says little on a busy machine).
    read = _fits(saved, "zeo")["read"]
    assert read.rows == ("zeo@0ms", "zeo@2ms")
    rows = saved.metadata["rtt"]["rows"]
    assert [x for x, _y in read.points] == [rows[n]["proxied_seconds"]["zeo"] for n in read.rows]
    assert "zeo against the RTT, zeo@0ms, zeo@2ms:" in stdout
    assert "read: +" in stdout
    pids = [row["proxy_pid"] for row in saved.metadata["rtt"]["rows"].values()]
    assert not [pid for pid in pids if os.path.exists(f"/proc/{pid}")]


@pytest.mark.zeo
def test_ctrl_c_stops_every_proxy(write_config, tmp_path):
    """Held in a measured cold read (the test-only fault hook), then SIGINT: no proxy left."""
    config = write_config(ZEO.split("<zodb fs>")[0])
    cli = start_cli(
        config, "-n", "20", "-c", "1", "-r", "1", "--rtt", "0,1ms", "--timeout", "120",
        env={"ZODBSHOOTOUT_FAULT": "zeo:cold:1:hang"},
    )  # fmt: skip
    try:
        proxies = _wait_for_proxies(cli, 2)
        cli.send_signal(signal.SIGINT)
        _stdout, stderr = cli.communicate(timeout=60)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.communicate()
    assert cli.returncode == 130, stderr
    assert "Traceback" not in stderr, stderr
    assert wait_until_session_empty(cli.pid) == []
    assert not [pid for pid in proxies if os.path.exists(f"/proc/{pid}")]


def _wait_for_proxies(cli, count: int) -> list[int]:
    """The proxies' PIDs, once the run is held in its measured read (its worker hangs there).

    The worker must have started (a child of the fork server, as
    test_interrupt waits for): a signal while the fork server hands it its
    descriptors is another matter than the proxies'.
    """
    assert cli.stderr is not None
    for line in cli.stderr:
        if line.rstrip().endswith(": read") and "warm-up" not in line:
            break
    else:
        pytest.fail("the run ended before its read stage")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = session_processes(cli.pid)
        proxies = [int(p.split()[0]) for p in running if "zodbshootout.network.proxy" in p]
        if len(proxies) == count and sum("forkserver" in p for p in running) >= 2:
            return proxies
        time.sleep(0.2)
    pytest.fail("no proxies: " + json.dumps(session_processes(cli.pid)))
