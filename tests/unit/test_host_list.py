"""--hosts: the host list, how workers are dealt to hosts, plain data, the skew footnote."""

from __future__ import annotations

import sys

import pytest

from zodbshootout.concurrency.host_environment import differing_hosts
from zodbshootout.concurrency.hosts import RemoteWorker, stage_facts
from zodbshootout.concurrency.task import decode_task, encode_task
from zodbshootout.concurrency.worker import StageTask
from zodbshootout.config.hosts import HostSpec, assign_hosts, parse_hosts
from zodbshootout.config.loader import ConfigSource
from zodbshootout.faults import Fault
from zodbshootout.phases.classic import Step
from zodbshootout.probes.diagnostics import LogSetup
from zodbshootout.render.skew import SKEW_FOOTNOTE, skew_footnote
from zodbshootout.render.table import build_table
from zodbshootout.results.record import (
    CellKey,
    Measurement,
    PhaseTiming,
    RunResult,
    timings_from_plain,
    timings_to_plain,
)


def test_comma_list_with_and_without_shares():
    assert parse_hosts("app1,app2=3") == (HostSpec("app1", 1), HostSpec("app2", 3))


def test_hosts_file_with_shares_python_and_comments(tmp_path):
    path = tmp_path / "hosts.txt"
    path.write_text("# clients\napp1 2 python=/srv/venv/bin/python\n\nuser@app2  # one share\n")
    assert parse_hosts(str(path)) == (
        HostSpec("app1", 2, "/srv/venv/bin/python"),
        HostSpec("user@app2", 1, None),
    )


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("app1=0", "share of app1 must be a whole number"),
        ("app1=x", "share of app1 must be a whole number"),
        ("app1,app1", "app1 is listed twice"),
        ("bad host", "is not a host name"),
        ("", "is not a host name"),
    ],
)
def test_malformed_hosts_are_refused_with_the_reason(value, message):
    with pytest.raises(ValueError, match=message):
        parse_hosts(value)


def test_workers_are_dealt_in_proportion_to_the_shares():
    a, b = HostSpec("a", 2), HostSpec("b", 3)
    assert [h.name for h in assign_hosts((a, b), 5)].count("b") == 3
    assert [h.name for h in assign_hosts((a, b), 10)].count("a") == 4
    even = (HostSpec("a"), HostSpec("b"))
    assert [h.name for h in assign_hosts(even, 4)] == ["a", "b", "a", "b"]


def test_gateway_specs_use_ssh_except_for_localhost():
    assert HostSpec("localhost").gateway_spec() == f"popen//python={sys.executable}"
    assert HostSpec("app1", python="/v/bin/python").gateway_spec().startswith("ssh=")
    assert (
        HostSpec("app1", python="/v/bin/python")
        .gateway_spec()
        .endswith("app1//python=/v/bin/python")
    )


def test_a_task_survives_the_trip_as_plain_data():
    task = StageTask(
        source=ConfigSource("<zodb x>\n</zodb>", "file:///c.conf", "/data"),
        database="x",
        server_addresses=(("127.0.0.1", 8100),),
        worker=3,
        object_count=10,
        object_size_bytes=128,
        steps=(Step("add"), Step("warm", timed=False)),
        barrier_timeout_seconds=60.0,
        log=LogSetup(level="DEBUG"),
        fault=Fault("x", "cold", 1, "kill"),
        loops=(("hot", 4),),
    )
    plain = encode_task(task)
    assert _only_builtins(plain)
    assert decode_task(plain) == task
    # The task names its own timed waits (the --hosts skew): each step's first.
    assert task.timed_waits() == [(0, "add")]


def test_timings_survive_the_trip_as_plain_data():
    timings = [PhaseTiming("add", 0, 0.5, 10, 0, None, None, object_growth={"*total*": 3})]
    assert timings_from_plain(timings_to_plain(timings)) == timings


def _only_builtins(value):
    if isinstance(value, dict):
        return all(isinstance(k, str) and _only_builtins(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_only_builtins(v) for v in value)
    return value is None or isinstance(value, str | int | float | bool)


def _result(skew_seconds: float) -> RunResult:
    result = RunResult(["db"], [10], [2], ["add"], 1)
    for worker in (0, 1):
        timing = PhaseTiming("add", worker, 0.1, 10, 0, None, None)
        result.measurements.append(Measurement("db", 2, 10, 1, timing))
    skew = {"database": "db", "object_count": 10, "concurrency": 2, "phase": "add"}
    result.metadata["barrier_skew"] = [{**skew, "repetition": 1, "skew_seconds": skew_seconds}]
    return result


def test_a_skew_beyond_a_small_share_of_the_phase_is_footnoted():
    key = CellKey("db", 2, 10, "add")
    assert skew_footnote(_result(0.001), key) is None  # 1 % of 0.1 s
    assert skew_footnote(_result(0.02), key) == SKEW_FOOTNOTE  # 20 %
    table = build_table(_result(0.02))
    assert table.blocks[0].rows[0][1][0].footnote == 1
    assert table.footnotes == [SKEW_FOOTNOTE]
    assert build_table(_result(0.001)).footnotes == []


def _worker(number: int, host: str, offset: float, releases: list[float]):
    task = StageTask(
        source=ConfigSource("", "", ""),
        database="db",
        server_addresses=(),
        worker=number,
        object_count=1,
        object_size_bytes=128,
        steps=(Step("add"), Step("warm", timed=False), Step("cold")),
        barrier_timeout_seconds=1.0,
    )
    place = {"hostname": host, "pid": 1, "net_namespace": f"net:[{host}]"}
    worker = RemoteWorker(task, HostSpec(host), None, None, None, place)
    worker.clock_offset_seconds, worker.clock_rtt_seconds = offset, 0.002
    worker.releases = releases
    return worker


def test_skew_is_the_spread_of_release_times_on_the_coordinators_clock():
    # b's clock runs 10 s ahead; in the coordinator's time b starts add 3 ms
    # after a, and cold 1 ms before it.  Each step waits twice.
    a = _worker(0, "a", 0.0, [100.0, 100.5, 101.0, 101.5, 102.0, 102.5])
    b = _worker(1, "b", 10.0, [110.003, 110.5, 111.0, 111.5, 111.999, 112.5])
    facts = stage_facts([a, b])
    skews = {s["phase"]: s["skew_seconds"] for s in facts["barrier_skew"]}
    assert set(skews) == {"add", "cold"}  # the untimed step is left out
    assert skews["add"] == pytest.approx(0.003)
    assert skews["cold"] == pytest.approx(0.001)
    assert facts["barrier_skew"][0]["uncertainty_seconds"] == pytest.approx(0.001)
    assert facts["workers"]["1"] == {"host": "b", **b.place}


def test_hosts_that_differ_get_a_warning_naming_them():
    def host(cpu: str) -> dict:
        return {"environment": {"cpu_model": cpu, "python": {"version": "3.11.2"}}}

    assert differing_hosts({"a": host("X"), "b": host("X")}) == []
    warnings = differing_hosts({"a": host("X"), "b": host("Y")})
    assert len(warnings) == 1
    assert "CPU model (a: X, b: Y)" in warnings[0]


def test_a_hosts_file_is_read_as_an_input_bounded_and_regular(tmp_path):
    """A 64 MB file of zeros took 26 s and a 268-million-character message."""
    import os
    import time

    from zodbshootout.errors import UsageError

    huge = tmp_path / "hosts.txt"
    with open(huge, "wb") as file:
        file.truncate(64 << 20)
    started = time.monotonic()
    with pytest.raises(UsageError, match=r"refusing to read the hosts file .*: 64 MiB is more"):
        parse_hosts(str(huge))
    assert time.monotonic() - started < 5
    fifo = tmp_path / "hosts.fifo"
    os.mkfifo(fifo)
    with pytest.raises(UsageError, match="it is a FIFO, not a regular file"):
        parse_hosts(str(fifo))
