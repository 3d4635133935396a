"""``mix --interval``: a lower bound and a bound on the intervals a run keeps (issue 35, 7)."""

from __future__ import annotations

import pytest

from zodbshootout.cli.commands.mix import MAX_INTERVALS, MIN_INTERVAL_SECONDS, interval_for
from zodbshootout.cli.entry import main

MEMORY = "<zodb mem>\n  <mappingstorage/>\n</zodb>\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["--interval", "1e-9"],
        ["--interval", "1e-5"],
        ["--interval", "0.0999"],
        ["--interval", "0"],
        ["--interval", "-1"],
        ["--interval", "nan"],
        ["-d", str(MAX_INTERVALS * MIN_INTERVAL_SECONDS * 2), "--interval", "0.1"],
        # within -d's range, but 200,000 one-second intervals
        ["-d", "200000", "--interval", "1"],
    ],
)
def test_an_interval_too_short_is_refused_in_one_line_before_anything_runs(tmp_path, capsys, argv):
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    saved = tmp_path / "run.json"
    code = main(["mix", str(config), "--threads", "-n", "10", "-o", str(saved), *argv])
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1, err
    assert "interval" in err
    assert not saved.exists()


def test_the_bounds_are_in_the_help(capsys):
    with pytest.raises(SystemExit):
        main(["mix", "--help"])
    assert f"at least {MIN_INTERVAL_SECONDS:g}" in " ".join(capsys.readouterr().out.split())


def test_without_interval_a_long_run_keeps_coarser_intervals():
    """--interval not given: 1 s up to 2 hours, then --duration ÷ 7,200 (bounded memory)."""
    assert interval_for(60, None) == 1.0
    assert interval_for(2 * 3600, None) == 1.0
    assert interval_for(10 * 3600, None) == 5.0
    assert interval_for(10 * 3600, 0.5) == 0.5  # as given


@pytest.mark.parametrize(
    ("argv", "words"),
    [
        (["-d", "10", "--restart-clients", "10"], "is not within --duration 10 s"),
        (["-d", "10", "--restart-clients", "0.5", "--threads"], "which --threads doesn't start"),
    ],
)
def test_a_restart_outside_the_run_or_with_threads_is_refused(tmp_path, capsys, argv, words):
    config = tmp_path / "mem.conf"
    config.write_text(MEMORY)
    code = main(["mix", str(config), "-n", "10", *argv])
    _out, err = capsys.readouterr()
    assert code == 2
    assert words in err
    assert len(err.strip().splitlines()) == 1
