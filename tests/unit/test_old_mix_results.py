"""Mix result files saved by an earlier zodbshootout load and print as they did then.

``golden/mix/*.json`` are real ``zodbshootout mix`` runs on etc/local.conf
(and one with a database that could not be reached), saved at commit
b93b3ee, before mix results became typed records in results/; the
``*.txt`` files are what show, compare and history printed from them at
that commit, in every format.  A change to how mix results are read or
rendered must leave these outputs as they are.

To rewrite the expected outputs after a change that means to alter them:
``ZODBSHOOTOUT_REWRITE_GOLDEN=1 pytest tests/unit/test_old_mix_results.py``.
"""

import json
import os
import pathlib

import pytest

from zodbshootout.cli.entry import main
from zodbshootout.results import file as resultfile

GOLDEN = pathlib.Path(__file__).parent / "golden" / "mix"
RUNS = ("base", "changed", "third")
FORMATS = ("table", "markdown", "csv", "json")


def _paths(names=RUNS):
    return [str(GOLDEN / f"{name}.json") for name in names]


def _output(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    text = f"$ zodbshootout {' '.join(argv)}\nexit {code}\n{captured.out}"
    return text + (f"--- stderr\n{captured.err}" if captured.err else "")


def _check(name, text):
    path = GOLDEN / name
    if os.environ.get("ZODBSHOOTOUT_REWRITE_GOLDEN"):
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def _relative(argv):
    """The command with the files named relative to the golden directory (stable text)."""
    return [
        os.path.relpath(word, GOLDEN) if word.startswith(str(GOLDEN)) else word for word in argv
    ]


def _run(argv, capsys, monkeypatch):
    monkeypatch.chdir(GOLDEN)
    return _output(_relative(argv), capsys)


def test_the_old_files_are_the_version_they_were():
    for path in _paths():
        result = resultfile.load(path)
        assert result.mix, path
        assert json.loads(pathlib.Path(path).read_text(encoding="utf-8"))["version"] == 4


@pytest.mark.parametrize("format_name", FORMATS)
def test_show_prints_an_old_mix_file_as_it_did(format_name, capsys, monkeypatch):
    text = "".join(
        _run(["show", path, "--format", format_name], capsys, monkeypatch) for path in _paths()
    )
    _check(f"show_{format_name}.txt", text)


def test_show_without_a_format_prints_what_the_run_printed(capsys, monkeypatch):
    text = "".join(_run(["show", path], capsys, monkeypatch) for path in _paths())
    expected = (GOLDEN / "show_table.txt").read_text(encoding="utf-8")
    assert text == expected.replace(" --format table", "")


@pytest.mark.parametrize("format_name", FORMATS)
def test_compare_of_old_mix_files_is_as_it_was(format_name, capsys, monkeypatch):
    argv = ["compare", *_paths(), "--format", format_name, "--fail-if-slower", "1"]
    _check(f"compare_{format_name}.txt", _run(argv, capsys, monkeypatch))


@pytest.mark.parametrize("format_name", FORMATS)
def test_history_of_old_mix_files_is_as_it_was(format_name, capsys, monkeypatch):
    argv = ["history", *_paths(), "--format", format_name]
    _check(f"history_{format_name}.txt", _run(argv, capsys, monkeypatch))
