"""The subcommands on saved runs load no storage stack: no ZODB, ZEO or RelStorage module.

A run loads RelStorage only when its configuration names it.

``show``, ``compare`` and ``history`` read result files and render them;
importing ZODB for that would cost start-up time and tie reading a file to
the storages installed.  Each command runs in a fresh interpreter that
reports which of those packages ended up in ``sys.modules``.
"""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from zodbshootout.config.loader import read_source
from zodbshootout.results import file as resultfile
from zodbshootout.results.record import Measurement, PhaseTiming, RunResult
from zodbshootout.storages.zeo.server import ServerRequest, ZEOServerProcess

from support import configs

STORAGE_STACK = ("ZODB", "ZEO", "relstorage")

#: Runs the command given as arguments, then prints the storage modules loaded.
PROBE = f"""
import json, sys
from zodbshootout.cli.entry import main
code = main(sys.argv[1:])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in {STORAGE_STACK!r})
print(json.dumps({{"code": code, "loaded": loaded}}), file=sys.stderr)
"""


def saved_run(path, rate_factor=1.0):
    measurements = [
        Measurement("fs", 1, 10, repetition, PhaseTiming(phase, 0, 0.01 * rate_factor, 10, 0, 0, 0))
        for repetition in (1, 2, 3)
        for phase in ("add", "cold")
    ]
    result = RunResult(["fs"], [10], [1], ["add", "cold"], 3, measurements=measurements)
    resultfile.save(result, str(path))
    return str(path)


def loaded_by(*args):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *args], capture_output=True, text=True, timeout=60
    )
    report = json.loads(done.stderr.strip().splitlines()[-1])
    return report["code"], report["loaded"]


def test_importing_the_statistics_loads_no_storage():
    code = "import sys, zodbshootout.results.stats\n" + (
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {STORAGE_STACK!r}))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "[]", done.stderr


@pytest.mark.parametrize("command", ["show", "compare", "history"])
def test_subcommands_on_saved_runs_load_no_storage(tmp_path, command):
    base = saved_run(tmp_path / "base.json")
    changed = saved_run(tmp_path / "changed.json", rate_factor=0.9)
    paths = [base] if command == "show" else [base, changed]
    code, loaded = loaded_by(command, *paths)
    assert code == 0
    assert loaded == []


def test_the_probe_sees_a_run_load_the_storage_stack(tmp_path):
    # A run (here refused for a missing configuration file) loads the stack:
    # the probe would see it, so an empty list above means something.
    code, loaded = loaded_by(str(tmp_path / "missing.conf"))
    assert code == 2
    assert "ZODB" in loaded


FILESTORAGE_AND_ZEO = configs.filestorage() + configs.embedded_zeo()
SQLITE = configs.sqlite()


@pytest.mark.parametrize(
    ("text", "loads_relstorage"), [(FILESTORAGE_AND_ZEO, False), (SQLITE, True)]
)
def test_a_run_loads_relstorage_only_when_its_configuration_names_it(
    tmp_path, text, loads_relstorage
):
    config = tmp_path / "run.conf"
    config.write_text(text)
    code, loaded = loaded_by(str(config), "-n", "5", "-c", "1", "-r", "1", "-q", "add")
    assert code == 0
    assert "ZODB" in loaded
    assert any(m.startswith("relstorage") for m in loaded) is loads_relstorage, loaded


@pytest.mark.parametrize(("text", "loads_relstorage"), [("", False), (SQLITE, True)])
def test_an_embedded_zeo_server_loads_relstorage_only_when_the_configuration_names_it(
    tmp_path, text, loads_relstorage
):
    # The server parses the whole configuration; RelStorage's compiled
    # modules in its memory map say whether that imported RelStorage.
    config = tmp_path / "run.conf"
    config.write_text(FILESTORAGE_AND_ZEO + text)
    source = read_source(str(config), str(tmp_path))
    with ZEOServerProcess(ServerRequest(source, "zeo", 0)) as server:
        assert server.address
        maps = pathlib.Path(f"/proc/{server.pid}/maps").read_text()
    assert ("/relstorage/" in maps) is loads_relstorage


def test_trace_stats_loads_no_storage(tmp_path):
    from zodbshootout.recording.format import FORMAT_VERSION, Header, Op, pack_header, pack_record

    trace = tmp_path / "app.1.0000.zodbtrace"
    trace.write_bytes(
        pack_header(Header(FORMAT_VERSION, 0, 1, 0, 0, 0))
        + pack_record(0, Op.LOAD, 0, 1, 1, b"\0" * 8, b"\0" * 8, 10)
    )
    code, loaded = loaded_by("trace-stats", str(trace))
    assert code == 0
    assert loaded == []
