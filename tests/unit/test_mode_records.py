"""Concurrency modes are records, chosen once; nothing else compares their names."""

import ast
import pathlib

import zodbshootout
from zodbshootout.concurrency.modes import MODES, mode_of
from zodbshootout.config.options import MODES as MODE_NAMES

#: Modules that still compare a mode's name, and why (each a later cut).
NAMED_ELSEWHERE = {
    # RunOptions refuses --cache-trace and --hosts outside process mode; config/
    # sits beneath concurrency/ and can't ask the records.
    "config/options.py",
    # A <rawkv> floor runs only in processes (its own cell loop, issue 18 item 5).
    "rawkv/floor.py",
    # Reading a saved file's options from before concurrency_mode was recorded.
    "results/metadata.py",
}


def test_every_mode_name_has_a_record():
    assert set(MODES) == set(MODE_NAMES)
    assert all(mode_of(name).name == name for name in MODE_NAMES)


def test_the_records_say_what_differs():
    processes, threads, gevent = (mode_of(n) for n in ("processes", "threads", "gevent"))
    assert processes.describe("shared") == "processes"
    assert threads.describe("unique") == "threads:unique"
    assert processes.warm_note("shared") is None
    assert "greenlets" in gevent.warm_note("shared")
    assert "sharing one DB" in threads.warm_note("shared")
    assert threads.shares_one_db("shared")
    assert not threads.shares_one_db("unique")
    assert not processes.shares_one_db("shared")
    assert threads.in_runner_process
    assert not gevent.in_runner_process
    assert gevent.monkey_patched
    assert not processes.monkey_patched


def _compares_a_mode(tree):
    names = {"processes", "threads", "gevent", "PROCESSES", "THREADS", "GEVENT"}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for operand in [node.left, *node.comparators]:
                text = ast.unparse(operand).strip("'\"")
                if text in names or text.endswith((".PROCESSES", ".THREADS", ".GEVENT")):
                    found.append(node.lineno)
    return found


def test_no_mode_name_comparisons_outside_the_records():
    package = pathlib.Path(zodbshootout.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative in NAMED_ELSEWHERE or relative == "concurrency/modes.py":
            continue
        lines = _compares_a_mode(ast.parse(path.read_text(encoding="utf-8")))
        found += [f"{relative}:{line}" for line in lines]
    assert found == []


def test_the_comparison_finder_finds_them():
    tree = ast.parse("if options.mode == GEVENT: pass\nif mode != 'processes': pass\nx = a == b\n")
    assert _compares_a_mode(tree) == [1, 2]
