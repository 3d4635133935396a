"""Ctrl-C, SIGTERM and SIGKILL of the command: what was measured survives, nothing lingers.

The run is held at a known place with the test-only fault hook: a worker of
the second database hangs in its cold phase while that database's ZEO
server (started by the tool) is running, so every kind of process the tool
starts exists when the signal arrives.
"""

from __future__ import annotations

import json
import signal
import time

import pytest

from support.processes import session_processes, start_cli, wait_until_session_empty

CONFIG = """
    <zodb first>
      <relstorage>
        <sqlite3>
          data-dir $(ZODBSHOOTOUT_DATA)/first
        </sqlite3>
      </relstorage>
    </zodb>
    <zodb second>
      <embeddedzeo>
        <filestorage>
          path $(ZODBSHOOTOUT_DATA)/second.fs
        </filestorage>
      </embeddedzeo>
    </zodb>
"""

HANG = {"ZODBSHOOTOUT_FAULT": "second:cold:1:hang"}


def start_and_hold(config: str, *extra: str):
    """Start a run and return once it is stuck in the second database's read stage."""
    cli = start_cli(config, "-n", "20", "-c", "2", "-r", "1", "--timeout", "120", *extra, env=HANG)
    assert cli.stderr is not None
    seen = []
    for line in cli.stderr:
        seen.append(line)
        # The hang comes in a measured repetition, after the warm-up's read.
        if (
            line.startswith("second:")
            and line.rstrip().endswith(": read")
            and "warm-up" not in line
        ):
            break
    else:
        cli.kill()
        pytest.fail("the run ended before the read stage: " + "".join(seen))
    wait_for_workers(cli.pid)
    return cli, "".join(seen)


def wait_for_workers(session_id: int) -> None:
    """Until the read stage's workers (children of the fork server) exist."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        running = session_processes(session_id)
        kinds = " ".join(running)
        if (
            "zodbshootout.storages.zeo.server" in kinds
            and sum("forkserver" in p for p in running) >= 3
        ):
            return
        time.sleep(0.2)
    pytest.fail("the workers never started: " + " ".join(session_processes(session_id)))


@pytest.mark.zeo
@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_stops_everything_and_keeps_what_was_measured(
    write_config, tmp_path, signum, code
):
    config = write_config(CONFIG)
    result_file = tmp_path / "run.json"
    cli, _progress = start_and_hold(config, "-o", str(result_file))
    cli.send_signal(signum)
    stdout, stderr = cli.communicate(timeout=60)

    assert cli.returncode == code, stderr
    assert "Traceback" not in stderr
    # The table shows everything the first database measured and the second's
    # write stage; the rest says the run was interrupted.
    table = {
        line.split('",')[0].strip('"'): [c.strip() for c in line.split('",')[1].split(",")]
        for line in stdout.splitlines()
        if line.startswith('"') and not line.startswith('"Transaction"')
    }
    assert all(cells[0].isdigit() for cells in table.values()), stdout
    assert table["Add 20 Objects"][1].isdigit()
    assert table["Read 20 Cold Objects"][1].startswith("n/a[")
    assert "not measured: the run was interrupted" in stdout
    # The result file was saved, and says so.
    saved = json.loads(result_file.read_text())
    assert saved["interrupted"] is True
    assert saved["signal"] == signal.Signals(signum).name
    assert any(m["database"] == "first" for m in saved["measurements"])
    # Workers, the fork server and the ZEO server are gone.
    assert wait_until_session_empty(cli.pid) == []


@pytest.mark.zeo
def test_killing_the_command_leaves_no_process_behind(write_config):
    """SIGKILL gives the tool no chance to clean up: its children must notice by themselves."""
    config = write_config(CONFIG)
    cli, _progress = start_and_hold(config)
    before = session_processes(cli.pid)
    assert any("zodbshootout.storages.zeo.server" in p for p in before)
    cli.send_signal(signal.SIGKILL)
    cli.communicate(timeout=30)
    # The ZEO server sees its stdin close, each worker its lifeline; then the
    # fork server and the resource tracker have no one left to serve.
    assert wait_until_session_empty(cli.pid, timeout=20) == []
