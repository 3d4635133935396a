"""A RunResult's cells: one index of every planned cell with its timings, in a chosen order."""

import ast
import pathlib

import zodbshootout
from zodbshootout.results.record import (
    DATABASE_ORDER,
    TABLE_ORDER,
    CellKey,
    Measurement,
    PhaseTiming,
    RunResult,
)


def _result():
    measurements = [
        Measurement(db, 1, 10, rep, PhaseTiming(phase, 0, 0.1 * rep, 10, 0, 0, 0), warmup=rep == 0)
        for db in ("a", "b")
        for rep in (0, 1, 2)
        for phase in ("add", "cold")
    ]
    return RunResult(["a", "b"], [10, 20], [1], ["add", "cold"], 2, measurements=measurements)


def test_cells_come_in_the_table_order_with_their_timings():
    cells = list(_result().cells())
    assert [key for key, _ in cells][:4] == [
        CellKey("a", 1, 10, "add"),
        CellKey("b", 1, 10, "add"),
        CellKey("a", 1, 10, "cold"),
        CellKey("b", 1, 10, "cold"),
    ]
    by_key = dict(cells)
    # Warm-ups are left out; a planned cell nothing measured has no timings.
    assert sorted(by_key[CellKey("a", 1, 10, "add")]) == [1, 2]
    assert by_key[CellKey("a", 1, 20, "add")] == {}
    assert len(cells) == 2 * 2 * 2


def test_the_database_order_groups_a_databases_cells():
    keys = _result().cell_keys(DATABASE_ORDER)
    assert [k.database for k in keys] == ["a"] * 4 + ["b"] * 4
    assert set(keys) == set(_result().cell_keys(TABLE_ORDER))


def test_cells_and_timings_for_agree():
    result = _result()
    for key, timings in result.cells():
        assert timings == result.timings_for(key)


def _nested_axis_loops(path):
    """Loops over two or more of a result's axes nested in each other (the old cell loop)."""
    axes = {"concurrencies", "object_counts", "phases", "databases"}

    def over_axis(loop):
        return isinstance(loop.iter, ast.Attribute) and loop.iter.attr in axes

    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.For) and over_axis(node):
            inner = [n for n in ast.walk(node) if isinstance(n, ast.For) and n is not node]
            if any(over_axis(n) for n in inner):
                found.append(f"{path.name}:{node.lineno}")
        comprehension = ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
        if isinstance(node, comprehension) and sum(map(over_axis, node.generators)) > 1:
            found.append(f"{path.name}:{node.lineno}")
    return found


def test_the_cell_loop_is_written_once():
    package = pathlib.Path(zodbshootout.__file__).parent
    modules = ["results/stats.py", "results/pyperf_export.py", "results/history.py"]
    modules += ["results/compare.py", "render/table.py"]
    assert [hit for m in modules for hit in _nested_axis_loops(package / m)] == []


def test_the_loop_finder_finds_the_old_loop(tmp_path):
    old = tmp_path / "old.py"
    old.write_text(
        "for c in result.concurrencies:\n"
        "    for d in result.databases:\n"
        "        pass\n"
        "keys = [k for c in r.concurrencies for p in r.phases]\n"
    )
    assert _nested_axis_loops(old) == ["old.py:1", "old.py:4"]
