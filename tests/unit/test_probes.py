"""Probes: entered together around each step, outside the timed region; a phase's recorder.

The stage loop itself knows no instrument: the options choose the probes
once (``select_probes``), and the loop calls the set at four points.
"""

import ast
import inspect
import threading

import pytest
from test_stage import N, _task, fake_clock, filestorage  # noqa: F401 (a fixture)

from zodbshootout.concurrency import worker
from zodbshootout.concurrency.worker import StageTask, execute_stage, select_probes
from zodbshootout.phases import classic
from zodbshootout.phases.classic import Step
from zodbshootout.phases.record import READ, Phase
from zodbshootout.phases.recorder import StepRecorder
from zodbshootout.probes.base import Probe, ProbeSet


class Logged(Probe):
    def __init__(self, name, log):
        self.name = name
        self.log = log

    def before(self, step):
        self.log.append(("before", self.name))

    def clock(self, clock):
        self.log.append(("clock", self.name))
        return clock

    def during(self, step):
        log, name = self.log, self.name

        class Around:
            def __enter__(self):
                log.append(("enter", name))

            def __exit__(self, *exc):
                log.append(("exit", name))

        return Around()

    def after(self, step):
        self.log.append(("after", self.name))
        return {self.name: step.phase}


def test_a_probe_set_enters_in_order_and_leaves_in_reverse():
    log = []
    probes = ProbeSet([Logged("a", log), Logged("b", log)])
    step = Step("add")
    probes.before(step)
    probes.clock(lambda: 0.0)
    with probes.during(step):
        log.append(("run", ""))
    fields = probes.after(step)
    assert log == [
        ("before", "a"),
        ("before", "b"),
        ("clock", "a"),
        ("clock", "b"),
        ("enter", "a"),
        ("enter", "b"),
        ("run", ""),
        ("exit", "b"),
        ("exit", "a"),
        ("after", "b"),
        ("after", "a"),
    ]
    assert fields == {"a": "add", "b": "add"}


def _ifs_on_the_task(function):
    """The conditions in *function* that read an option of the task (an instrument's switch)."""
    tree = ast.parse(inspect.getsource(function).lstrip())
    return [
        ast.unparse(node.test)
        for node in ast.walk(tree)
        if isinstance(node, ast.If | ast.IfExp) and "task." in ast.unparse(node.test)
    ]


def test_the_stage_loop_has_no_instrument_branches():
    assert _ifs_on_the_task(worker.execute_stage) == []
    # The step itself only asks whether a test's fault fires here.
    assert _ifs_on_the_task(worker._run_step) == []
    assert "profile" not in inspect.getsource(worker._run_step)


def test_the_options_choose_the_probes(filestorage):  # noqa: F811
    class Database:
        db = type("DB", (), {"storage": object()})()

    plain = _task(filestorage, [Step("add")])
    names = [type(p).__name__ for p in select_probes(plain, Database())]
    assert names == ["LoadCounts", "SharedCacheCounts", "TraceMarks"]  # no metered clock
    import dataclasses

    everything = dataclasses.replace(
        plain,
        worker=1,
        leaks=True,
        profile_prefix="p",
        measure_size=True,
        counters=True,
        work=True,
    )
    names = [type(p).__name__ for p in select_probes(everything, Database())]
    assert names == [
        *("LoadCounts", "Leaks", "StorageGrowth", "Statements", "WorkMeter"),
        *("Profiler", "TraceMarks"),
    ]


def _two_kinds(scope, prepared):
    """A phase that reads each object and opens a connection, recording both kinds."""
    recorder = scope.recorder
    for _ in range(scope.object_count):
        with recorder.time("read"):
            pass
    recorder.count("open", 2)
    with recorder.time("open"):
        pass
    return None


def test_a_phase_records_several_operation_types_and_their_latencies(filestorage, monkeypatch):  # noqa: F811
    pytest.importorskip("hdrh")
    from hdrh.histogram import HdrHistogram

    phase = Phase("two_kinds", READ, run=_two_kinds)
    monkeypatch.setitem(classic.REGISTRY, phase.name, phase)
    clock = fake_clock(0.001)  # every reading 1 ms later: each operation takes 1 ms
    [timing] = execute_stage(_task(filestorage, [Step("two_kinds")]), threading.Barrier(1), clock)
    assert timing.operations == {"read": N, "open": 3}
    histogram = HdrHistogram(1, 3_600_000_000, 3)
    histogram.decode_and_add(timing.latency["read"])
    assert histogram.get_total_count() == N
    assert histogram.get_value_at_percentile(50) == pytest.approx(1000, rel=0.01)
    # The sample itself is still timed whole, around the recorded operations.
    assert timing.seconds == pytest.approx(0.001 * (2 * (N + 1) + 1))


def test_the_classic_phases_record_nothing_more(filestorage):  # noqa: F811
    writes, _reads = classic.plan_stages(["add"])
    [timing] = execute_stage(_task(filestorage, writes), threading.Barrier(1))
    assert timing.operations is None
    assert timing.latency is None


def test_a_recorder_without_records_has_empty_fields():
    assert StepRecorder(lambda: 0.0).fields() == {"operations": None, "latency": None}


def test_a_stage_task_stays_plain_data():
    # Probes are built in the worker from the task's options, never sent.
    for item in StageTask.__dataclass_fields__.values():
        assert "Probe" not in str(item.type)
