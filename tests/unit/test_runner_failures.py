"""A failure in the runner's own untimed steps (populate) costs the cells it touched, loudly.

The warm-up measures every phase once; a repetition whose populate fails
afterwards must not leave cells that look settled by the warm-up ("not
measured", no reason, exit 0), nor numbers from fewer repetitions than asked.
The fault hook's ``populate`` phase raises in the runner, as a dead server does
(the whole run is in tests/integration/test_run_runner_failures.py: it records
the checkout's commit with git).
"""

from __future__ import annotations


def test_a_cell_with_fewer_repetitions_than_asked_says_so():
    from sample_run import sample_result

    from zodbshootout.render.table import build_table

    result = sample_result()
    asked = result.repetitions
    assert asked >= 2
    result.measurements[:] = [m for m in result.measurements if m.repetition != asked]
    table = build_table(result)
    assert any(f"measured in {asked - 1} of {asked} repetitions" in f for f in table.footnotes)
    cell = table.blocks[0].rows[0][1][0]
    assert cell.rate is not None
    assert cell.footnote is not None
