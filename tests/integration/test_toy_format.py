"""The run and ``mix`` print with a format registered in one place (tests/support/toy_format.py).

In-process, so that the registry the test changed is the one the command
reads; the workers run as they always do.
"""

from __future__ import annotations

import json

import pytest

from zodbshootout.cli.entry import main

from support import configs, toy_format

pytestmark = pytest.mark.slow


@pytest.fixture
def config(tmp_path, monkeypatch):
    monkeypatch.setenv("ZODBSHOOTOUT_DATA", str(tmp_path / "data"))
    path = tmp_path / "fs.conf"
    path.write_text(configs.filestorage("fs"))
    return str(path)


def test_a_run_prints_its_table_in_the_registered_format(config, monkeypatch, tmp_path, capsys):
    toy_format.register(monkeypatch)
    saved = tmp_path / "run.json"
    argv = [config, "-n", "20", "-c", "1", "-r", "1", "add", "cold", "-q"]
    assert main([*argv, "--format", toy_format.NAME, "-o", str(saved)]) == 0
    assert capsys.readouterr().out == "toy run (mean): fs\n"
    # The run's file remembers the format: show prints it again in it.
    assert json.loads(saved.read_text())["metadata"]["format"] == toy_format.NAME
    assert main(["show", str(saved)]) == 0
    assert capsys.readouterr().out == "toy run (mean): fs\n"


def test_mix_prints_its_table_in_the_registered_format(config, monkeypatch, capsys):
    pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")
    toy_format.register(monkeypatch)
    argv = ["mix", config, "-n", "50", "-c", "1", "-d", "0.3", "--warmup", "0", "--threads", "-q"]
    assert main([*argv, "--format", toy_format.NAME]) == 0
    assert capsys.readouterr().out == "toy mix: fs\n"
