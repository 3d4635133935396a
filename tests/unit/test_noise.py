"""The busy-machine warning."""

from zodbshootout.results.noise import busiest, busy_warning
from zodbshootout.run.noise import load_average


def test_a_load_at_the_core_count_warns_with_what_to_do():
    warning = busy_warning([0.5, 2.4, 1.0], 2)
    assert warning is not None
    assert "load average 2.4 on 2 cores" in warning
    assert "close other programs" in warning


def test_a_quiet_machine_or_unknown_load_does_not_warn():
    assert busy_warning([0.3, 1.9], 2) is None
    assert busy_warning([None, None], 2) is None
    assert busy_warning([], 4) is None


def test_the_busiest_sample_of_any_database_counts():
    recorded = {"a": {"before": 0.4, "after": 3.5}, "b": {"before": None, "after": 1.0}}
    assert busiest(recorded) == 3.5
    assert busiest({}) is None


def test_this_machine_reports_a_load_average():
    load = load_average()
    assert load is not None
    assert load >= 0.0


def test_the_runs_metadata_gives_the_loads_and_the_cores():
    from zodbshootout.results.noise import format_busy_warning

    busy = {"load_average": {"a": {"before": 1.0, "after": 4.5}}, "environment": {"cpu_count": 4}}
    assert format_busy_warning(busy) == [
        "machine was busy: load average 4.5 on 4 cores; close other programs and run "
        "again for numbers that only measure the databases"
    ]
    quiet = {"load_average": {"a": {"before": 1.0, "after": 3.9}}, "environment": {"cpu_count": 4}}
    assert format_busy_warning(quiet) == []
    assert format_busy_warning({}) == []
