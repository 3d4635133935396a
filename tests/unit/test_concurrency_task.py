"""One task protocol, one runner skeleton: the rules that keep every mode on one path.

Source checks (no process starts): the concurrency layer never asks a
task's class, mix imports no private name of another package, every
``*Runner`` stays under 200 lines; and every kind of task survives the trip
to another host as plain data.
"""

from __future__ import annotations

import ast
import json
import pathlib
import re

import pytest

import zodbshootout
from zodbshootout.concurrency.task import Task, decode_task, encode_task
from zodbshootout.config.loader import ConfigSource
from zodbshootout.phases.classic import Step
from zodbshootout.rawkv.section import StoreSpec
from zodbshootout.rawkv.stage import RawStageTask
from zodbshootout.results.record import PhaseTiming

PACKAGE = pathlib.Path(zodbshootout.__file__).parent
MAX_RUNNER_LINES = 200


def sources(folder: str = "", root: pathlib.Path = PACKAGE) -> dict[str, str]:
    return {
        str(path.relative_to(root)): path.read_text(encoding="utf-8")
        for path in sorted((root / folder).rglob("*.py"))
    }


def test_the_concurrency_layer_never_asks_a_task_its_class():
    found = [
        f"{name}:{number}"
        for name, text in sources("concurrency").items()
        for number, line in enumerate(text.splitlines(), 1)
        if re.search(r"isinstance\(.*Task", line)
    ]
    assert found == []


def private_imports(package: str, root: pathlib.Path = PACKAGE) -> list[str]:
    """``from zodbshootout.OTHER... import _name`` in *package*'s modules."""
    found = []
    for name, text in sources(package, root).items():
        for node in ast.walk(ast.parse(text)):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            parts = node.module.split(".")
            if parts[0] != "zodbshootout" or parts[1:2] == [package]:
                continue
            found += [f"{name}: {alias.name}" for alias in node.names if alias.name[0] == "_"]
    return found


def test_mix_imports_no_private_name_of_another_package():
    assert private_imports("mix") == []


def test_the_private_import_check_sees_one(tmp_path):
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "m.py").write_text(
        "from zodbshootout.concurrency.processes import _hidden, public\n"
        "from zodbshootout.fake.other import _own\n"
    )
    assert private_imports("fake", tmp_path) == ["fake/m.py: _hidden"]


def runner_lengths() -> dict[str, int]:
    lengths = {}
    for name, text in sources().items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and node.name.endswith("Runner"):
                assert node.end_lineno is not None
                lengths[f"{name}:{node.name}"] = node.end_lineno - node.lineno + 1
    return lengths


def test_every_runner_is_under_two_hundred_lines():
    lengths = runner_lengths()
    assert {"run/runner.py:Runner", "mix/runner.py:MixRunner"} <= set(lengths)
    assert {name: n for name, n in lengths.items() if n >= MAX_RUNNER_LINES} == {}


def test_both_modes_stand_on_the_one_skeleton():
    from zodbshootout.mix.runner import MixRunner
    from zodbshootout.run.runner import Runner
    from zodbshootout.run.skeleton import RunnerSkeleton

    assert issubclass(Runner, RunnerSkeleton)
    assert issubclass(MixRunner, RunnerSkeleton)
    # What the skeleton does is done in one place only.
    for method in ("run", "set_up", "refuse", "describe_hosts", "record_host_facts"):
        assert method not in vars(MixRunner), method
    for method in ("set_up", "refuse", "describe_hosts", "record_host_facts"):
        assert method not in vars(Runner), method


def _raw_task() -> RawStageTask:
    return RawStageTask(
        source=ConfigSource("<rawkv x>\n</rawkv>", "file:///c.conf", "/data"),
        spec=StoreSpec("x", "sqlite", "/data/x.db", False, 1 << 20),
        worker=1,
        object_count=10,
        object_size_bytes=128,
        steps=(Step("add"), Step("update", timed=False)),
        barrier_timeout_seconds=30.0,
        loops=(("hot", 3),),
    )


@pytest.mark.parametrize("make", [_raw_task], ids=["rawkv"])
def test_a_task_crosses_as_plain_data_and_decodes_its_own_results(make):
    task: Task = make()
    wire = json.loads(json.dumps(encode_task(task)))
    assert decode_task(wire) == task
    assert task.timed_waits() == [(0, "add")]
    timing = PhaseTiming("add", 1, 0.25, 10, 0, 0, None, storage_growth_bytes=4096)
    plain = json.loads(json.dumps([vars(timing)]))
    assert task.decode(plain) == [timing]
