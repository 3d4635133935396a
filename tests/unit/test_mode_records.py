"""Concurrency modes are records, chosen once; nothing else compares their names."""

import ast
import pathlib

import pytest

import zodbshootout
from zodbshootout.concurrency.modes import MODES, mode_of, refuse_options
from zodbshootout.config.hosts import HostSpec
from zodbshootout.errors import UsageError
from zodbshootout.options.run import MODES as MODE_NAMES
from zodbshootout.options.run import RunOptions
from zodbshootout.results import metadata


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


#: The names of the modes and of their sharings, as strings and as constants.
_MODE_WORDS = {"processes", "threads", "gevent", "shared", "unique"}
_MODE_WORDS |= {word.upper() for word in _MODE_WORDS}


def _compares_a_mode(tree):
    """Lines comparing a mode's or a sharing's name (==, !=, in, not in a tuple of them)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for operand in operands:
                parts = (
                    operand.elts
                    if isinstance(operand, ast.Tuple | ast.List | ast.Set)
                    else [operand]
                )
                for part in parts:
                    text = ast.unparse(part).strip("'\"").rpartition(".")[2]
                    if text in _MODE_WORDS:
                        found.append(node.lineno)
    return sorted(set(found))


def test_no_mode_name_comparisons_outside_the_records():
    package = pathlib.Path(zodbshootout.__file__).parent
    found = []
    for path in sorted(package.rglob("*.py")):
        relative = path.relative_to(package).as_posix()
        if relative == "concurrency/modes.py":
            continue
        lines = _compares_a_mode(ast.parse(path.read_text(encoding="utf-8")))
        found += [f"{relative}:{line}" for line in lines]
    assert found == []


def test_the_comparison_finder_finds_them():
    source = (
        "if options.mode == GEVENT: pass\n"
        "if mode != 'processes': pass\n"
        "x = a == b\n"
        "if spec.sharing == concurrency.SHARED: pass\n"
        "if mode in ('threads', 'gevent'): pass\n"
        "if 'unique' not in names: pass\n"
        "if name in MODES: pass\n"
    )
    assert _compares_a_mode(ast.parse(source)) == [1, 2, 4, 5, 6]


@pytest.mark.parametrize("mode", ["threads", "gevent"])
@pytest.mark.parametrize(
    ("field", "value", "says"),
    [
        ("cache_trace_dir", "traces", "--cache-trace traces worker processes"),
        ("hosts", (HostSpec("localhost"),), "--hosts starts worker processes"),
    ],
)
def test_a_mode_without_worker_processes_refuses_what_needs_them(mode, field, value, says):
    options = RunOptions(mode=mode, **{field: value})
    assert mode_of(mode).option_problems(options)[0].startswith(says)
    with pytest.raises(UsageError, match=says):
        refuse_options(options)
    assert mode_of("processes").option_problems(RunOptions(**{field: value})) == []


def test_old_files_name_their_mode_as_its_record_describes_it():
    for name, mode in MODES.items():
        options = {"mode": name, "threads": "unique"}  # before "sharing" was its name
        recorded = metadata.comparable_facts({"options": options})["concurrency mode"]
        assert recorded == mode.describe("unique")
    new = {"concurrency_mode": "threads:shared", "options": {"mode": "processes"}}
    assert metadata.comparable_facts(new)["concurrency mode"] == "threads:shared"
