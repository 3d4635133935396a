"""The classic table against golden text."""

import csv
import io
import pathlib

from zodbshootout.render.csv import format_csv
from zodbshootout.results.record import Failure, Measurement, PhaseTiming, RunResult

GOLDEN = pathlib.Path(__file__).parent / "golden"


def _timing(phase, worker, seconds, objects):
    return PhaseTiming(phase, worker, seconds, objects, loads=0, storage_loads=0, cache_hits=0)


def _result(concurrencies=(2,)):
    phases = ["add", "cold", "steamin"]
    seconds = {"add": 0.1, "cold": 0.05, "steamin": 0.0005}
    measurements = []
    for concurrency in concurrencies:
        databases = [("postgresql", 1.0), ("zeo_fs", 1.25)]
        if concurrency == 1:
            databases.append(("fs", 0.8))  # FileStorage is measurable by one process
        for database, factor in databases:
            for repetition in (1, 2):
                for phase in phases:
                    for worker in range(concurrency):
                        duration = seconds[phase] * factor * (1 + 0.1 * repetition)
                        measurements.append(
                            Measurement(
                                database,
                                concurrency,
                                1000,
                                repetition,
                                _timing(phase, worker, duration, 1000),
                            )
                        )
    failures = [
        Failure(
            "fs", c, 1000, tuple(phases), "FileStorage can be opened by only one process at a time"
        )
        for c in concurrencies
        if c > 1
    ]
    return RunResult(
        databases=["postgresql", "zeo_fs", "fs"],
        object_counts=[1000],
        concurrencies=list(concurrencies),
        phases=phases,
        repetitions=2,
        measurements=measurements,
        failures=failures,
    )


def test_classic_table_matches_golden():
    lines = format_csv(_result())
    assert "\n".join(lines) + "\n" == (GOLDEN / "classic_table.txt").read_text()


def test_several_concurrency_levels_make_blocks():
    lines = format_csv(_result(concurrencies=(1, 2)))
    assert "\n".join(lines) + "\n" == (GOLDEN / "classic_table_blocks.txt").read_text()


def test_min_aggregate_takes_fastest_repetition():
    mean_row = format_csv(_result(), "mean")[1]
    min_row = format_csv(_result(), "min")[1]
    # Add: 2000 objects / 0.11 s and / 0.12 s -> mean 17424, best 18182.
    assert mean_row.split()[3:5] == ["17424,", "13939,"]
    assert min_row.split()[3:5] == ["18182,", "14545,"]


def test_a_duration_the_clock_could_not_resolve_is_a_footnote_not_inf():
    result = RunResult(
        databases=["db"],
        object_counts=[10],
        concurrencies=[1],
        phases=["steamin"],
        repetitions=1,
        measurements=[Measurement("db", 1, 10, 1, _timing("steamin", 0, 0.0, 10))],
    )
    lines = format_csv(result)
    assert lines[1].split()[-1] == "n/a[1]"
    assert "inf" not in "\n".join(lines)
    assert "[1] db (concurrency 1): too fast for the clock to time" in lines


def _steamin(repetition, seconds, loops=64, warmup=False):
    timing = PhaseTiming("steamin", 0, seconds, 1000, 0, 0, None, loops=loops)
    return Measurement("db", 1, 1000, repetition, timing, warmup=warmup)


def _precise_result(seconds, precision=0.05):
    return RunResult(
        databases=["db"],
        object_counts=[1000],
        concurrencies=[1],
        phases=["steamin"],
        repetitions=3,
        measurements=[_steamin(0, 0.01, loops=1, warmup=True)]
        + [_steamin(rep, s) for rep, s in enumerate(seconds, 1)],
        metadata={"stopping_rule": {"precision": precision}},
    )


def test_a_cell_short_of_the_precision_stays_a_number_and_its_footnote_names_it():
    # 64 loops of 1000 objects in 0.064 s and 0.128 s: 1000000 and 500000 objects/s.
    lines = format_csv(_precise_result([0.064, 0.128, 0.064]))
    assert lines[1].split()[-1] == "833333"
    assert lines[3].startswith("[1] not within ±5% of the mean (95% confidence)")
    assert lines[3].endswith("; cells: db Read 1000 Steamin' Objects")
    # The classic contract: every measured cell parses as a number.
    rows = list(csv.reader(io.StringIO("\n".join(lines[:2])), skipinitialspace=True))
    assert [float(text) for text in rows[1][1:]] == [833333.0]


def test_a_precise_cell_and_a_fixed_rule_have_no_mark():
    steady = format_csv(_precise_result([0.064, 0.0641, 0.0639]))
    assert steady[1].split()[-1] == "1000002"  # mean of 1/0.064, 1/0.0641, 1/0.0639 (×64000)
    fixed = format_csv(_precise_result([0.064, 0.128, 0.064], precision=None))
    assert fixed[1].split()[-1] == "833333"


def test_the_samples_note_counts_repetitions_and_loops_not_the_warmup():
    lines = format_csv(_precise_result([0.064, 0.0641, 0.0639]))
    assert lines[-1] == (
        "Note: samples per cell: 3, after an untimed warm-up; loops per sample: steamin 64"
    )


def test_a_footnote_on_many_cells_counts_them_and_show_verbose_names_them(tmp_path, capsys):
    """24 imprecise cells: one short footnote line; the names in show --verbose."""
    from sample_run import busy_result

    from zodbshootout.cli.entry import main
    from zodbshootout.results import file as resultfile

    result = busy_result()
    result.metadata["stopping_rule"] = {"precision": 0.05}
    lines = format_csv(result)
    (footnote,) = [line for line in lines if line.startswith("[1] ")]
    assert footnote.endswith("; 24 cells (show --verbose names them)")
    assert len(footnote) < 200
    path = tmp_path / "busy.json"
    resultfile.save(result, str(path))
    assert main(["show", str(path)]) == 0
    out, err = capsys.readouterr()
    assert out == "\n".join(lines) + "\n"
    # The noisy-cells warning names five and counts the rest.
    assert err.count(": ±19%") == 5
    assert "  ... and 19 more (show --verbose lists every one)" in err
    assert main(["show", str(path), "--verbose"]) == 0
    out, err = capsys.readouterr()
    detail = out.split("[1] applies to 24 measured cell(s):\n")[1].splitlines()
    assert len(detail) == 24
    assert detail[0] == "  postgresql Add 1000 Objects"
    assert detail[-1] == "  zeo_fs Read 1000 Warm Objects"
    assert err.count(": ±19%") == 24
    assert "more (show --verbose" not in err
