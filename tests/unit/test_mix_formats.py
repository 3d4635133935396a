"""A mix run and a comparison of mix runs as Markdown, CSV and JSON; two mix runs in one chart."""

from __future__ import annotations

import csv
import io
import json

import pytest

pytest.importorskip("hdrh", reason="hdrhistogram is not installed (pip install -e .)")

from test_mix_parts import synthetic_run

from zodbshootout.cli.entry import main
from zodbshootout.mix.recorder import Recorder
from zodbshootout.mix.workloads import parse_mix
from zodbshootout.render.formats import get_format
from zodbshootout.results import file as resultfile
from zodbshootout.results.mix import MixRecord, MixRun
from zodbshootout.results.mix_compare import MixComparison, compare_mix
from zodbshootout.results.mix_stats import summarize
from zodbshootout.results.record import Failure

STRAY = "3 object changes in the database were made by transactions that failed"


def two_databases():
    """db (10 ms reads, conflicts, stray changes) and db2 (20 ms), and one that failed."""
    result = synthetic_run(10.0)
    record = result.mix[0]
    record["operations"]["read"]["conflicts"] = {"ConflictError": 3}
    record.update(increments=4, warmup_increments=1, uncertain_increments=0, changes_found=8)
    result.mix.append(synthetic_run(20.0, seed=2, database="db2").mix[0])
    result.failures.append(Failure("zeo", 1, 10, ("mix",), "cannot connect"))
    return result


def open_loop_run():
    """An open-loop (--rate) run whose inserts never ran: no latency to show for them."""
    from zodbshootout.mix.operations import Shape
    from zodbshootout.mix.worker import MixPlan
    from zodbshootout.results.mix import merge_reports
    from zodbshootout.results.record import RunResult

    recorder = Recorder(("read", "insert"), start=0.0, open_loop=True)
    for i in range(500):
        intended = i / 100
        recorder.record("read", intended, intended + 0.002, intended + 0.007)
    recorder.close_intervals(5.5)
    report = recorder.as_data()
    report.update(
        dict.fromkeys(
            ("worker", "unstarted", "increments", "warmup_increments", "uncertain_increments"), 0
        ),
        inserted=0,
        seconds=5.0,
        counters=None,
    )
    plan = MixPlan(
        parse_mix("read=9,insert=1"), 10, Shape(1, 1, 16), 5.0, 0, 1, rate_per_second=100.0
    )
    result = RunResult(["db"], [10], [1], [], 1)
    result.mix.append(merge_reports("db", [report], plan, 1))
    result.metadata["mix"] = {"workload": "custom(read=9,insert=1)", "arrival": "constant"}
    return result


def mix_lines(result, format_name="table"):
    """*result*'s mix records in *format_name*."""
    return get_format(format_name).mix(MixRun.of(result))


def comparison_lines(comparisons, format_name):
    """(base, changed, changed's name) comparisons of synthetic runs in *format_name*."""
    compared = [
        MixComparison(compare_mix(MixRun.of(base), MixRun.of(changed)), "base", name)
        for base, changed, name in comparisons
    ]
    return get_format(format_name).mix_comparisons(compared)


def _csv_table(lines):
    """The rows of the csv (header first) and its notes (after the blank line)."""
    blank = lines.index("") if "" in lines else len(lines)
    return list(csv.reader(io.StringIO("\n".join(lines[:blank])))), lines[blank + 1 :]


def test_the_table_is_a_block_per_database_and_an_unknown_format_is_refused():
    result = two_databases()
    lines = mix_lines(result)
    assert lines[0] == "db: custom(read=1), 1 workers, 10.0 s"
    assert lines[1].split()[:2] == ["operation", "tx/s"]
    assert "db2: custom(read=1), 1 workers, 10.0 s" in lines
    assert lines[-1] == "zeo: not measured: cannot connect"
    with pytest.raises(ValueError, match="unknown format 'xml'"):
        mix_lines(result, "xml")


def test_csv_is_one_row_per_database_and_operation_of_plain_numbers():
    result = two_databases()
    rows, notes = _csv_table(mix_lines(result, "csv"))
    header = rows[0]
    assert header[:4] == ["database", "operation", "transactions", "tx_per_second"]
    for column in ("p50_ms", "p90_ms", "p99_ms", "p99.9_ms", "max_ms", "conflicts", "failures"):
        assert column in header
    assert [row[:2] for row in rows[1:]] == [["db", "read"], ["db2", "read"]]
    # As the classic csv's contract: every measured cell parses as a number.
    numbers = [[float(text) for text in row[2:]] for row in rows[1:]]
    db, db2 = (dict(zip(header[2:], row, strict=True)) for row in numbers)
    (summary,) = summarize(MixRecord.from_data(result.mix[0]))
    assert db["p99_ms"] == pytest.approx(summary.percentiles_ms[99.0], abs=0.001)
    assert db["conflicts"] == 3
    assert db2["p50_ms"] / db["p50_ms"] == pytest.approx(2.0, rel=0.1)
    # The notes under the table, as the classic csv's: each names its database.
    assert any(note.startswith(f"Note: db: {STRAY}") for note in notes)
    assert "Note: db: read: conflicts ConflictError 3" in notes
    assert "Note: zeo: not measured: cannot connect" in notes


def test_csv_of_an_open_loop_run_has_service_and_lag_and_empty_cells_for_no_transactions():
    rows, notes = _csv_table(mix_lines(open_loop_run(), "csv"))
    header = rows[0]
    assert {"service_p50_ms", "service_p99_ms", "lag_mean_ms", "lag_max_ms"} <= set(header)
    by_operation = {row[1]: dict(zip(header, row, strict=True)) for row in rows[1:]}
    read = by_operation["read"]
    assert float(read["service_p50_ms"]) == pytest.approx(5.0, rel=0.01)
    assert float(read["p50_ms"]) == pytest.approx(7.0, rel=0.01)  # from the intended start
    assert float(read["lag_mean_ms"]) == pytest.approx(2.0, rel=0.01)
    insert = by_operation["insert"]
    assert insert["transactions"] == "0"
    assert insert["p99_ms"] == insert["service_p99_ms"] == ""
    assert notes == []


def test_markdown_is_a_table_per_database_with_its_notes_below_it():
    lines = mix_lines(two_databases(), "markdown")
    db = lines.index("**db**: custom(read=1), 1 workers, 10.0 s")
    db2 = lines.index("**db2**: custom(read=1), 1 workers, 10.0 s")
    table = lines[db + 2 : db + 5]
    assert table[0].startswith("| Operation ")
    assert "| p99.9 ms |" in table[0]
    assert set(table[1]) <= set("|:- ")
    assert table[2].startswith("| read ")
    notes = [line for line in lines[db:db2] if line.startswith("- Note: ")]
    assert notes[0] == "- Note: read: conflicts ConflictError 3"
    assert notes[1].startswith(f"- Note: {STRAY}")
    assert not any(line.startswith("- Note: ") for line in lines[db2:])
    assert lines[-1] == "zeo: not measured: cannot connect"


def test_json_carries_the_same_figures_and_no_nan():
    result = two_databases()
    document = json.loads("\n".join(mix_lines(result, "json")))
    assert document["format"] == "zodbshootout-mix-table"
    db, db2 = document["databases"]
    (read,) = db["operations"]
    rows, _notes = _csv_table(mix_lines(result, "csv"))
    figures = dict(zip(rows[0], rows[1], strict=True))
    for name in ("tx_per_second", "p50_ms", "p99.9_ms", "max_ms", "conflicts"):
        assert read[name] == pytest.approx(float(figures[name]))
    assert read["conflicts_by_class"] == {"ConflictError": 3}
    assert any(note.startswith(STRAY) for note in db["notes"])
    assert db2["notes"] == []
    assert document["not_measured"] == [{"database": "zeo", "reason": "cannot connect"}]
    # An operation that ran no transaction: null, which strict JSON readers accept.
    text = "\n".join(mix_lines(open_loop_run(), "json"))
    insert = json.loads(text)["databases"][0]["operations"][1]
    assert insert["operation"] == "insert"
    assert insert["p50_ms"] is None
    assert insert["service_p99_ms"] is None
    assert "NaN" not in text


def test_a_comparison_in_each_format_says_what_the_table_says():
    base, slow = synthetic_run(10.0, seed=1), synthetic_run(20.0, seed=2)
    comparisons = [(base, slow, "slow")]
    rows = list(csv.DictReader(io.StringIO("\n".join(comparison_lines(comparisons, "csv")))))
    p99 = next(row for row in rows if row["metric"] == "p99_ms")
    assert float(p99["changed_value"]) / float(p99["base_value"]) == pytest.approx(2.0, rel=0.1)
    assert float(p99["ratio"]) == pytest.approx(2.0, rel=0.1)
    assert p99["significant"] == "true"
    for row in rows:
        float(row["base_value"]), float(row["changed_value"]), float(row["ratio"])
    untested = next(row for row in rows if row["metric"] == "p50_ms")
    assert untested["p_adjusted"] == untested["significant"] == ""
    document = json.loads("\n".join(comparison_lines(comparisons, "json")))
    (comparison,) = document["comparisons"]
    assert (comparison["base"], comparison["changed"]) == ("base", "slow")
    tested = [row for row in comparison["rows"] if row["p_adjusted"] is not None]
    assert {row["metric"] for row in tested} == {"tx_per_second", "p99_ms"}
    markdown = comparison_lines(comparisons, "markdown")
    assert markdown[0] == "| Database | Operation | Metric | base | slow | Change | p | p (Holm) |"
    assert any(line.startswith("| db | read | p99 ms |") and " * |" in line for line in markdown)
    table = comparison_lines(comparisons, "table")
    assert table[0].split()[:5] == ["database", "operation", "metric", "base", "slow"]
    # Several changed runs: a heading each in Markdown, one header in csv.
    several = [*comparisons, (base, base, "same")]
    markdown = comparison_lines(several, "markdown")
    assert [line for line in markdown if line.startswith("### ")] == [
        "### slow against base",
        "### same against base",
    ]
    assert comparison_lines(several, "csv")[0].startswith("base,changed,")
    assert sum(1 for line in comparison_lines(several, "csv") if "base,changed" in line) == 1


@pytest.fixture
def saved(tmp_path):
    paths = {}
    for name, latency, seed in (("base", 10.0, 1), ("slow", 20.0, 2)):
        paths[name] = str(tmp_path / f"{name}.json")
        resultfile.save(synthetic_run(latency, seed=seed), paths[name])
    return paths


def test_show_and_compare_of_mix_runs_take_format(saved, capsys):
    assert main(["show", saved["base"], "--format", "csv"]) == 0
    rows, _notes = _csv_table(capsys.readouterr().out.splitlines())
    assert rows[1][:2] == ["db", "read"]
    assert main(["show", saved["base"], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["databases"][0]["database"] == "db"
    # Without --format, what the run printed: a run that printed csv shows csv again.
    run = resultfile.load(saved["base"])
    run.metadata["format"] = "markdown"
    resultfile.save(run, saved["base"])
    assert main(["show", saved["base"]]) == 0
    assert capsys.readouterr().out.startswith("Transactions per second")
    assert main(["compare", saved["base"], saved["slow"], "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["comparisons"][0]["changed"] == "slow.json"
    # --fail-if-slower works whatever the format: the verdict is on stderr.
    assert main(["compare", saved["base"], saved["slow"], "--format", "csv", "-q",
                 "--fail-if-slower", "20"]) == 1  # fmt: skip
    out, err = capsys.readouterr()
    assert out.startswith("base,changed,")
    assert "db: p99" in err


@pytest.mark.parametrize("command", [["show", "{base}"], ["mix", "etc/local.conf"]])
def test_an_unknown_format_is_one_line_and_exit_2(saved, capsys, command):
    argv = [word.format(**saved) for word in command]
    assert main([*argv, "--format", "xml"]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "invalid choice: 'xml'" in err


def test_plot_of_two_mix_runs_draws_both_in_one_chart(saved, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from zodbshootout.render import mix_plot

    labels = []
    original = mix_plot._spectrum_line

    def spy(axes, record, **style):
        labels.append(style["label"])
        return original(axes, record, **style)

    monkeypatch.setattr(mix_plot, "_spectrum_line", spy)
    chart = tmp_path / "two.png"
    assert main(["plot", saved["base"], saved["slow"], "-o", str(chart), "-q"]) == 0
    assert chart.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Labelled by run name; the changed run's p99 change is compare's (doubled, significant).
    assert labels[0] == "db: base.json"
    assert labels[1].startswith("db: slow.json (p99 +")
    assert labels[1].endswith("% *)")
    change = float(labels[1].split("p99 ")[1].split("%")[0])
    assert change == pytest.approx(100.0, abs=10.0)


def test_plot_refuses_a_mix_run_with_a_classic_one_or_no_database_in_common(saved, tmp_path):
    pytest.importorskip("matplotlib")
    from sample_run import sample_result

    classic = str(tmp_path / "classic.json")
    resultfile.save(sample_result(), classic)
    chart = str(tmp_path / "x.png")
    assert main(["plot", saved["base"], classic, "-o", chart]) == 2
    other = str(tmp_path / "other.json")
    resultfile.save(synthetic_run(10.0, database="elsewhere"), other)
    assert main(["plot", saved["base"], other, "-o", chart]) == 2
    assert not (tmp_path / "x.png").exists()


def test_history_of_mix_runs_takes_format(saved, tmp_path, capsys):
    # A third run that measured another database too: the others show nothing for it.
    newest = synthetic_run(30.0, seed=3)
    newest.mix.append(synthetic_run(5.0, seed=4, database="db2").mix[0])
    paths = [saved["base"], saved["slow"], str(tmp_path / "newest.json")]
    for index, path in enumerate(paths):
        run = newest if index == 2 else resultfile.load(path)
        run.metadata.update(started=1_700_000_000 + index * 60, label=f"run{index}")
        resultfile.save(run, path)
    assert main(["history", *paths, "--format", "csv"]) == 0
    rows = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert rows[0] == ["database", "metric", "run0", "run1", "run2"]
    p50 = next(row for row in rows if row[:2] == ["db", "p50_ms"])
    base, slow, new = (float(text) for text in p50[2:])
    assert slow / base == pytest.approx(2.0, rel=0.1)
    assert new / base == pytest.approx(3.0, rel=0.1)
    assert next(row for row in rows if row[:2] == ["db2", "p99_ms"])[2:4] == ["", ""]
    assert main(["history", *paths, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    row = next(r for r in document["rows"] if (r["database"], r["metric"]) == ("db", "p50_ms"))
    assert row["values"] == [pytest.approx(v, abs=0.001) for v in (base, slow, new)]
    assert main(["history", *paths, "--format", "markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| Database | Metric ")
    db2 = [line.split("|")[3:6] for line in lines if line.startswith("| db2 ")]
    assert [[cell.strip() for cell in row][:2] for row in db2] == [["-", "-"]] * 5


def test_plot_of_three_mix_runs_is_refused_in_one_line(saved, tmp_path, capsys):
    third = str(tmp_path / "third.json")
    resultfile.save(synthetic_run(12.0, seed=5), third)
    assert main(["plot", saved["base"], saved["slow"], third, "-o", str(tmp_path / "h.png")]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1
    assert "'zodbshootout history' lines up more" in err


def test_report_of_two_mix_runs_or_more_is_refused_in_one_line(saved, tmp_path, capsys):
    for runs in ([saved["base"], saved["slow"]], [str(tmp_path)]):
        assert main(["report", *runs, "-o", str(tmp_path / "site")]) == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1
        assert "report writes a page for one mix run; for two or more use compare" in err


def test_report_of_one_mix_run_is_its_tables_and_a_chart_page(saved, tmp_path, capsys):
    pytest.importorskip("matplotlib")
    site = tmp_path / "site"
    assert main(["report", saved["base"], "-o", str(site), "--series", "x"]) == 2
    assert "--series: this mix run sampled no series" in capsys.readouterr().err
    assert main(["report", saved["base"], "-o", str(site)]) == 0
    assert {"index.html", "mix.html", "mix.svg"} <= {p.name for p in site.iterdir()}
    index = (site / "index.html").read_text()
    assert '<a href="mix.html">' in index
    assert index.count("<table>") == len(MixRun.of(resultfile.load(saved["base"])).records)
    assert '<img class="chart" src="mix.svg"' in (site / "mix.html").read_text()


def test_a_p_that_underflowed_is_shown_as_below_what_a_double_prints():
    from zodbshootout.results.mix_compare import MetricComparison, MixComparison

    rows = [
        MetricComparison("db", "read", "p99", 1.0, 2.0, p_adjusted=0.0),
        MetricComparison("db", "write", "p99", 1.0, 1.01, p_adjusted=0.25),
    ]
    for name in ("table", "markdown"):
        lines = get_format(name).mix_comparisons([MixComparison(rows, "a", "b")])
        text = "\n".join(lines)
        assert "<1e-300 *" in text
        assert "0.25" in text
        assert "0.25 *" not in text
        assert " 0 *" not in text


def test_a_closed_loop_run_against_a_rate_run_warns_on_stderr_and_under_the_table(tmp_path, capsys):
    """-84 % tx/s between a closed loop and --rate 100/s is no change: both say so."""
    closed, rate = tmp_path / "closed.json", tmp_path / "rate.json"
    resultfile.save(synthetic_run(10.0, seed=1), str(closed))
    resultfile.save(open_loop_run(), str(rate))
    assert main(["compare", str(closed), str(rate)]) == 0
    out, err = capsys.readouterr()
    assert err == (
        "zodbshootout compare: warning: closed.json and rate.json are different kinds of mix "
        "run (closed loop vs --rate 100/s (constant); workload custom(read=1) vs "
        "custom(read=9,insert=1)): their tx/s and latencies measure different things; "
        "compare runs of one kind\n"
    )
    assert "Warning: closed.json and rate.json are different kinds of mix run" in out
    assert main(["compare", str(closed), str(rate), "--format", "json", "-q"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    kind = json.loads(out)["comparisons"][0]["kind_differences"]
    assert [k["aspect"] for k in kind] == ["loop", "workload"]
    # Two runs of one kind: no warning.
    same = tmp_path / "same.json"
    resultfile.save(synthetic_run(12.0, seed=2), str(same))
    assert main(["compare", str(closed), str(same)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "Warning" not in out


def test_a_mix_run_measured_on_a_busy_machine_is_marked_in_every_format(tmp_path, capsys):
    base, busy = tmp_path / "base.json", tmp_path / "busy.json"
    resultfile.save(synthetic_run(10.0, seed=1), str(base))
    loaded = synthetic_run(10.0, seed=2)
    loaded.metadata["load_average"] = {"db": {"before": 9.5, "after": 12.25}}
    loaded.metadata["environment"] = {"cpu_count": 2}
    resultfile.save(loaded, str(busy))
    assert main(["compare", str(base), str(busy)]) == 0
    out, err = capsys.readouterr()
    assert "busy.json was measured on a busy machine (load 12.2 on 2 cores)" in err
    assert (
        "Busy: busy.json was measured on a busy machine (load 12.2 on 2 cores): a difference "
        "may come from the load rather than the change."
    ) in out
    assert main(["compare", str(base), str(busy), "--format", "markdown", "-q"]) == 0
    assert "Busy: busy.json was measured on a busy machine" in capsys.readouterr().out
    assert main(["compare", str(base), str(busy), "--format", "json", "-q"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["comparisons"][0]["busy"] == {"busy.json": "load 12.2 on 2 cores"}


def test_only_significant_keeps_the_significant_rows_of_mix_runs(saved, capsys):
    assert main(["compare", saved["base"], saved["slow"], "--format", "csv"]) == 0
    every = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    significant = [r for r in every if r["significant"] == "true"]
    assert significant  # p99 doubled
    assert all(float(r["p_adjusted"]) >= float(r["p_value"]) for r in every if r["p_value"])
    assert main(["compare", saved["base"], saved["slow"], "--only-significant",
                 "--format", "csv"]) == 0  # fmt: skip
    assert list(csv.DictReader(io.StringIO(capsys.readouterr().out))) == significant
    assert main(["compare", saved["base"], saved["slow"], "--only-significant"]) == 0
    out = capsys.readouterr().out
    hidden = len(every) - len(significant)
    assert f"{hidden} of {len(every)} rows hidden (--only-significant)" in out


def test_another_dataset_or_key_choice_is_another_kind_but_another_k_is_not():
    from zodbshootout.results.mix_compare import kind_differences

    def run(**options):
        result = synthetic_run(10.0)
        result.metadata["mix"].update(
            {"objects": 300, "object_size_bytes": 128, "keys": "zipfian", "hot": [0.2, 0.8]},
            **options,
        )
        return result

    assert kind_differences(run(), run(keys_per_operation=20)) == []
    assert kind_differences(run(), run(objects=3000, keys="hotspot")) == [
        ("keys", "zipfian", "hotspot 0.2/0.8"),
        ("dataset", "300 objects of 128 bytes", "3000 objects of 128 bytes"),
    ]
