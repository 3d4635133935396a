"""compare: both rates, the ratio in words, Welch's verdict with Holm's correction, the summary."""

import csv
import dataclasses
import io
import json
import math
import pathlib

import pytest
from sample_run import busy_result, sample_result, with_noise

from zodbshootout.errors import UsageError
from zodbshootout.render.comparison import format_ratio
from zodbshootout.render.formats import get_format
from zodbshootout.results.compare import (
    compare_results,
    detectable_difference,
    holm_adjust,
    require_common_cells,
)

GOLDEN = pathlib.Path(__file__).parent / "golden"


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(1.32, "1.32x faster"), (1 / 1.1, "1.10x slower"), (1.001, "same"), (None, "-")],
)
def test_ratio_in_words(ratio, text):
    assert format_ratio(ratio) == text


def shown(comparison, format_name="table"):
    """*comparison* as the format *format_name* prints it."""
    return get_format(format_name).comparisons([comparison])


def test_holm_multiplies_the_smallest_p_by_the_number_of_tests_and_stays_monotone():
    # Sorted: 0.01*3 = 0.03, 0.02*2 = 0.04, 0.04*1 = 0.04 (kept at least the previous).
    assert holm_adjust([0.04, 0.01, 0.02]) == pytest.approx([0.04, 0.03, 0.04])
    assert holm_adjust([0.5, 0.6]) == [1.0, 1.0]
    assert holm_adjust([]) == []


def test_a_run_compared_with_itself_differs_nowhere():
    comparison = compare_results(sample_result(), sample_result())
    measured = comparison.measured_in_both
    assert len(measured) == 5
    assert all(c.ratio == 1.0 and c.significant is False for c in measured)
    assert comparison.geometric_mean == pytest.approx(1.0)
    assert shown(comparison)[-1] == "0 of 5 tested cells differ significantly."


def test_a_real_change_is_significant_and_noise_is_not():
    changed = sample_result(scale={"add": 0.5})  # add takes half the time
    changed = with_noise(changed, "postgresql", "cold", (1.05, 0.97, 1.0))
    comparison = compare_results(sample_result(), changed)
    by_cell = {(c.key.database, c.key.phase): c for c in comparison.cells}
    add = by_cell["postgresql", "add"]
    assert add.ratio == pytest.approx(2.0)
    assert add.significant is True
    assert by_cell["postgresql", "cold"].significant is False


def test_the_correction_can_turn_a_marginal_cell_insignificant():
    """A p just under 0.05 on its own is not significant among several tested cells."""
    changed = with_noise(sample_result(), "postgresql", "cold", (1.05, 1.05, 1.05))
    comparison = compare_results(sample_result(), changed)
    cold = next(
        c for c in comparison.cells if (c.key.database, c.key.phase) == ("postgresql", "cold")
    )
    assert cold.test is not None
    assert cold.test.p_value < 0.05
    assert cold.p_adjusted == pytest.approx(min(1.0, cold.test.p_value * 5))
    assert cold.significant is False


def test_geometric_mean_of_the_ratios():
    # add twice as fast in both databases, cold and steamin unchanged: (2 * 2 * 1 * 1 * 1)^(1/5)
    comparison = compare_results(sample_result(), sample_result(scale={"add": 0.5}))
    assert comparison.geometric_mean == pytest.approx(4 ** (1 / 5))


def test_comparison_matches_golden():
    changed = sample_result(scale={"add": 0.5, "cold": 1.1})
    comparison = compare_results(
        sample_result(), changed, base_name="a.json", changed_name="b.json"
    )
    lines = shown(comparison)
    assert "\n".join(lines) + "\n" == (GOLDEN / "compare.txt").read_text()


def test_markdown_is_a_table_with_a_summary_row():
    changed = sample_result(scale={"add": 0.5, "cold": 1.1})
    comparison = compare_results(
        sample_result(), changed, base_name="a.json", changed_name="b.json"
    )
    lines = shown(comparison, "markdown")
    assert "\n".join(lines) + "\n" == (GOLDEN / "compare.md").read_text()
    # Rendered by a real CommonMark parser with GitHub's table extension.
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").enable("table").render("\n".join(lines))
    assert html.count("<table>") == 1
    assert html.count("<tr>") == 1 + 7  # header, six cells, the geometric mean
    assert html.count("<th>") + html.count("<th style") == 9
    assert "<td><strong>Geometric mean</strong></td>" in html
    assert html.count("<p>") == 5  # the method, one paragraph per line


def test_csv_and_json_carry_every_cell_and_the_geometric_mean():
    comparison = compare_results(sample_result(), sample_result(scale={"add": 0.5}))
    rows = list(csv.DictReader(io.StringIO("\n".join(shown(comparison, "csv")))))
    assert len(rows) == 7  # six cells (one failed in both) and the geometric mean
    add = next(r for r in rows if (r["database"], r["phase"]) == ("postgresql", "add"))
    assert float(add["ratio"]) == pytest.approx(2.0)
    assert add["significant"] == "true"
    assert float(rows[-1]["ratio"]) == pytest.approx(4 ** (1 / 5))
    document = json.loads("\n".join(shown(comparison, "json")))
    only = document["comparisons"][0]
    assert only["correction"] == "holm"
    assert math.isclose(only["geometric_mean_ratio"], 4 ** (1 / 5))
    assert len(only["cells"]) == 6


def test_single_repetitions_are_compared_but_not_tested():
    one = sample_result()
    one.measurements = [m for m in one.measurements if m.repetition == 1]
    comparison = compare_results(one, one)
    assert comparison.cells[0].ratio == 1.0
    assert comparison.cells[0].significant is None
    assert "inconclusive (untested: needs 2+ repetitions on each side)" in (shown(comparison)[1])


def test_cells_only_in_one_run_are_listed_apart():
    changed = sample_result()
    changed.databases = [*changed.databases, "sqlite"]
    comparison = compare_results(sample_result(), changed, changed_name="b.json")
    assert all(c.key.database != "sqlite" for c in comparison.cells)
    assert [k.phase for k in comparison.only_in_changed] == ["add", "cold", "steamin"]
    assert comparison.only_in_base == []
    only = [line for line in shown(comparison) if line.startswith("Only in")]
    assert only == [
        "Only in b.json (3 cells, not compared): sqlite, add, 1000 objects, concurrency 2; "
        "sqlite, cold, 1000 objects, concurrency 2; sqlite, steamin, 1000 objects, concurrency 2"
    ]


def test_no_cell_in_common_is_an_error():
    other = sample_result()
    other.databases = ["mysql"]
    other.measurements = [
        m.__class__("mysql", m.concurrency, m.object_count, m.repetition, m.timing)
        for m in other.measurements
    ]
    comparison = compare_results(sample_result(), other, base_name="a", changed_name="b")
    with pytest.raises(UsageError, match="b and a have 0 cells in common"):
        require_common_cells(comparison)


def test_slower_than_names_only_significant_slowdowns_beyond_the_threshold():
    changed = sample_result(scale={"cold": 1.2, "add": 1.05})
    comparison = compare_results(sample_result(), changed)
    slower = comparison.slower_than(10)
    assert sorted((c.key.database, c.key.phase) for c in slower) == [
        ("postgresql", "cold"),
        ("zeo_fs", "cold"),
    ]
    assert slower[0].slowdown_percent == pytest.approx(20.0)
    assert comparison.slower_than(25) == []


def test_each_cell_states_the_smallest_slowdown_its_runs_could_detect():
    quiet = compare_results(sample_result(), sample_result())
    busy = compare_results(busy_result(), busy_result())
    quiet_seen = [c.detectable_slowdown_percent for c in quiet.tested]
    busy_seen = [c.detectable_slowdown_percent for c in busy.tested]
    # ±2% over 3 repetitions sees a few percent; ±20% over 5 among 24 cells, not even 2x.
    assert all(0 < seen < 10 for seen in quiet_seen)
    assert all(seen > 100 for seen in busy_seen)
    # A difference exactly the detectable one is significant at alpha / m.
    cell = busy.cells[0]
    change = cell.detectable_rate_change
    assert change is not None
    assert cell.base is not None
    assert detectable_difference(
        cell.base.stddev, 5, cell.base.stddev, 5, len(busy.tested)
    ) == pytest.approx(change)
    lines = shown(busy)
    assert lines[0].split()[-5:] == ["Verdict", "p", "Holm", "p", "Detectable"]
    assert any(line.startswith("Overall: these runs could detect a slowdown of ") for line in lines)


def test_three_verdicts_slower_faster_inconclusive():
    changed = sample_result(scale={"add": 0.5, "cold": 1.1})
    comparison = compare_results(sample_result(), changed)
    verdicts = {(c.key.database, c.key.phase): c.verdict for c in comparison.cells}
    assert verdicts["postgresql", "add"] == "faster"
    assert verdicts["postgresql", "cold"] == "slower"
    assert verdicts["postgresql", "steamin"] == "inconclusive"
    assert verdicts["zeo_fs", "steamin"] is None  # failed on both sides


def test_a_gate_on_a_busy_machine_is_inconclusive_and_advises_repetitions():
    comparison = compare_results(busy_result(), busy_result(("mysql", "cold"), 1.5))
    cold = next(c for c in comparison.cells if (c.key.database, c.key.phase) == ("mysql", "cold"))
    assert cold.verdict == "inconclusive"  # 1.5x slower, yet not significant
    gate = comparison.gate(10)
    assert gate.slower == []
    assert len(gate.blind) == 24
    advised = gate.advised_repetitions
    assert advised is not None
    assert advised > 5
    # That many repetitions at the same spread would see a 10% slowdown in every cell.
    assert all(c.repetitions_to_detect(10) <= advised for c in gate.blind)
    assert comparison.gate(10_000).blind == []


def test_the_chart_interval_crosses_one_exactly_when_inconclusive():
    changed = sample_result(scale={"add": 0.5})
    changed = with_noise(changed, "postgresql", "cold", (1.05, 1.05, 1.05))
    for comparison in (
        compare_results(sample_result(), changed),
        compare_results(busy_result(), busy_result(("mysql", "cold"), 3.0)),
    ):
        for cell in comparison.tested:
            low, high = cell.ratio_interval()
            assert (low <= 1.0 <= high) == (cell.verdict == "inconclusive"), cell


def _with_index_entries(result, entries):
    result.metadata["index_entries"] = entries
    return result


def test_a_run_with_index_entries_against_one_without_gives_the_cost_per_entry():
    plain = _with_index_entries(sample_result(), 0)
    indexed = _with_index_entries(sample_result({"add": 1.5}), 2)
    comparison = compare_results(plain, indexed)
    costs = {cost.key.database: cost for cost in comparison.index_costs}
    assert sorted(costs) == ["postgresql", "zeo_fs"]  # add only: cold writes no entries
    assert {cost.key.phase for cost in costs.values()} == {"add"}
    for database, factor in (("postgresql", 1.0), ("zeo_fs", 1.25)):
        cost = costs[database]
        # A worker's 1000 objects took 0.1005 s × factor (mean of its two workers)
        # without entries and half as long again with 2 entries per object.
        seconds_per_object = 0.1005 * factor / 1000
        assert cost.microseconds_per_entry == pytest.approx(
            0.5 * seconds_per_object / 2 * 1e6, rel=0.01
        )
        assert cost.indexed_keys_per_second == pytest.approx(3 * cost.indexed_rate)
        assert cost.plain_keys_per_second == cost.plain_rate
    # Either order: the run without entries is the plain one.
    backwards = compare_results(indexed, plain).index_costs
    assert [c.microseconds_per_entry for c in backwards] == [
        c.microseconds_per_entry for c in comparison.index_costs
    ]
    table = "\n".join(shown(comparison))
    assert "Index cost of --index-entries 2" in table
    assert "µs/entry" in table
    document = json.loads("\n".join(shown(comparison, "json")))
    rows = document["comparisons"][0]["index_cost"]
    assert [row["database"] for row in rows] == ["postgresql", "zeo_fs"]
    assert rows[0]["microseconds_per_entry"] == pytest.approx(25.1, rel=0.01)


@pytest.mark.parametrize("entries", [(0, 0), (2, 2), (2, 3)])
def test_no_index_cost_unless_exactly_one_run_wrote_index_entries(entries):
    base = _with_index_entries(sample_result(), entries[0])
    changed = _with_index_entries(sample_result({"add": 1.5}), entries[1])
    comparison = compare_results(base, changed)
    assert comparison.index_costs == []
    assert "Index cost" not in "\n".join(shown(comparison))


def test_a_cell_too_noisy_to_show_any_slowdown_is_said_in_words():
    noisy = with_noise(sample_result(), "postgresql", "add", (1.0, 4.0, 0.25))
    lines = shown(compare_results(noisy, sample_result()))
    overall = next(line for line in lines if line.startswith("Overall"))
    assert "no slowdown, however large, could show in postgresql, add" in overall
    assert "none or more" not in overall


def test_only_significant_lists_the_significant_cells_and_counts_the_others():
    changed = sample_result(scale={"add": 0.5})
    comparison = dataclasses.replace(
        compare_results(sample_result(), changed, base_name="a.json", changed_name="b.json"),
        only_significant=True,
    )
    lines = shown(comparison)
    assert [line.split()[:2] for line in lines[1:3]] == [["postgresql", "Add"], ["zeo_fs", "Add"]]
    assert lines[3].startswith("----")
    assert lines[-1] == (
        "4 of 6 rows hidden (--only-significant): 3 not significant after Holm's "
        "correction, 1 untested or not measured in both."
    )
    # The summary still covers every cell measured in both: (2 * 2 * 1 * 1 * 1)^(1/5).
    assert "Geometric mean  (5 cells)" in lines[4]
    document = json.loads("\n".join(shown(comparison, "json")))["comparisons"][0]
    assert [c["phase"] for c in document["cells"]] == ["add", "add"]
    assert document["hidden_not_significant"] == 4
    assert math.isclose(document["geometric_mean_ratio"], 4 ** (1 / 5))
    rows = list(csv.DictReader(io.StringIO("\n".join(shown(comparison, "csv")))))
    assert [r["phase"] for r in rows] == ["add", "add", "geometric_mean"]


def test_the_raw_p_is_beside_holms_and_n_s_where_holms_is_not_significant():
    """2 of 24 cells with p < 0.05 alone, none below Holm's 0.05 / 24 at the smallest."""
    changed = busy_result()
    for cell in (("mysql", "cold"), ("zeo_fs", "warm")):
        changed = with_noise(changed, *cell, (1.5,) * 5)
    comparison = compare_results(busy_result(), changed)
    flagged = [c for c in comparison.cells if c.test and c.test.p_value < 0.05]
    assert [(c.key.database, c.key.phase) for c in flagged] == [
        ("mysql", "cold"),
        ("zeo_fs", "warm"),
    ]
    # Holm: the smallest of 24 p-values is multiplied by 24, the next by 23 (monotone).
    assert flagged[0].p_adjusted == pytest.approx(min(1.0, 24 * flagged[0].test.p_value))
    cold = next(line for line in shown(comparison) if line.startswith("mysql ") and "Cold" in line)
    assert cold.split()[-4:-1] == ["inconclusive", f"{flagged[0].test.p_value:.3f}", "n.s."]


def test_a_run_measured_on_a_busy_machine_is_marked_in_the_output_itself():
    """Not only on stderr: the Markdown pasted into a pull request carries the mark."""
    loaded = sample_result()
    loaded.metadata["load_average"] = {"postgresql": {"before": 3.0, "after": 4.5}}
    loaded.metadata["environment"] = {"cpu_count": 2}
    comparison = compare_results(sample_result(), loaded, base_name="a", changed_name="b")
    assert comparison.busy == (("b", "load 4.5 on 2 cores"),)
    mark = (
        "Busy: b was measured on a busy machine (load 4.5 on 2 cores): a difference may come "
        "from the load rather than the change."
    )
    assert mark in shown(comparison)
    assert mark in "\n".join(shown(comparison, "markdown"))
    document = json.loads("\n".join(shown(comparison, "json")))
    assert document["comparisons"][0]["busy"] == {"b": "load 4.5 on 2 cores"}
    assert compare_results(sample_result(), sample_result()).busy == ()
