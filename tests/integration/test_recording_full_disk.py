"""A full disk stops the recording, not the application.

The trace goes to a 96 KB tmpfs that the test mounts in a mount namespace of
its own (``unshare -m``: nothing outside sees it, and it goes away with the
namespace); the application's database is outside it.  The application runs
to its end, the log has one line about the recording, and the trace holds
what fitted.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT

APP = ROOT / "tests" / "support" / "recording_app.py"


def namespaces_refusal() -> str | None:
    if os.geteuid() != 0:
        return "mounting a tmpfs in a mount namespace needs root"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    return None


@pytest.mark.skipif(bool(namespaces_refusal()), reason=str(namespaces_refusal()))
def test_a_full_disk_stops_the_recording_with_one_line_and_the_application_goes_on(tmp_path):
    small = tmp_path / "small"
    small.mkdir()
    config = tmp_path / "app.conf"
    config.write_text(
        "%import zodbshootout\n<zodb>\n  <recording>\n"
        f"    path {small}/app\n    flush-interval 0.02\n"
        f"    <filestorage>\n      path {tmp_path}/Data.fs\n    </filestorage>\n"
        "  </recording>\n</zodb>\n"
    )
    python = shlex.quote(sys.executable)
    script = (
        f"mount -t tmpfs -o size=96k tmpfs {small} && "
        f"{python} {APP} {config} --transactions 600 && "
        f"df -k {small} | tail -1 && "
        f"{python} -m zodbshootout trace-stats {small}"
    )
    done = subprocess.run(
        ["unshare", "-m", "sh", "-c", script], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout.splitlines()[0])
    assert report["commits"] == 300  # every transaction ran
    stopped = [line for line in done.stderr.splitlines() if "recording stopped" in line]
    assert len(stopped) == 1, done.stderr
    assert "No space left on device" in stopped[0]
    assert "Traceback" not in done.stderr
    # The tmpfs was full, and what fitted reads back (trace-stats ran on it).
    assert " 100% " in done.stdout.splitlines()[1]
    assert "transactions:" in done.stdout
    assert not any(small.iterdir())  # the tmpfs was the namespace's only
