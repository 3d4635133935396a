"""Results for CI and history, from real runs: --save-to, --label, history, compare, plot, progress.

Three tiny FileStorage runs (``-n 20 -c 1 -r 3``) are saved once for the
module.  A slowdown is forced by editing copies of a saved run: the cold
phase three times slower, as a slower build would have measured it.  On
this shared machine a tiny run's repetitions can vary by ±70%, so both
copies first get a quiet machine's timings (each phase's median, varied by
1-2%): the verdict is then certain, and what is tested is compare's logic,
not the machine's noise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import itertools
import json
import os
import pathlib
import statistics
import time

import pytest

from zodbshootout.cli import entry as cli
from zodbshootout.cli.measure import _run
from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions

from conftest import run_cli
from support import configs

PHASES = ("add", "update", "warm", "cold", "prefetch", "hot", "steamin", "open")


@dataclasses.dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str


def subcommand(*args: str) -> Done:
    """``zodbshootout SUBCOMMAND ...`` in this process (the runs themselves are real processes)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(list(args))
    return Done(code, out.getvalue(), err.getvalue())


@pytest.fixture(scope="module")
def history_dir(tmp_path_factory) -> pathlib.Path:
    base = tmp_path_factory.mktemp("history")
    config = base / "fs.conf"
    config.write_text(configs.filestorage("fs"))
    saved = base / "runs"
    for label in ("first", "second", "third"):
        done = run_cli(
            str(config), "-n", "20", "-c", "1", "-r", "3", "-q", "--save-to", str(saved),
            "--label", label,
        )  # fmt: skip
        assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
        time.sleep(1.0)  # distinct start times, to the second, in the file names
    return saved


def saved_runs(history_dir: pathlib.Path) -> list[pathlib.Path]:
    return sorted(history_dir.glob("*.json"))


def test_save_to_names_files_by_start_time_and_label(history_dir):
    names = [path.name for path in saved_runs(history_dir)]
    assert [name.rsplit("-", 1)[-1] for name in names] == [
        "first.json",
        "second.json",
        "third.json",
    ]
    assert all(len(name.split("-", 1)[0]) == len("20261123T162000Z") for name in names)
    document = json.loads(saved_runs(history_dir)[0].read_text())
    assert document["metadata"]["label"] == "first"
    environment = document["metadata"]["environment"]
    # Recorded as the machine says, or "unknown": never made up.
    governor_file = pathlib.Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor")
    expected = governor_file.read_text().strip() if governor_file.exists() else "unknown"
    assert environment["cpu_governor"] == expected
    assert len(environment["load_average_start"]) == 3
    assert len(environment["load_average_end"]) == 3
    # Run from this checkout (an editable install): its commit.
    assert len(environment["git"]["commit"]) == 40


def test_history_prints_one_row_per_cell_with_one_value_per_run(history_dir):
    done = subcommand("history", str(history_dir))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    header = lines[0].split()
    assert header[:2] == ["Database", "Transaction"]
    assert header[-3:] == ["first", "second", "third"]
    rows = [line for line in lines[1:] if line.startswith("fs ")]
    assert len(rows) == len(PHASES)
    for row in rows:
        values = [word for word in row.split() if word.isdigit()]
        # "Add 20 Objects" holds the count ("Open Connection (n=20)" not as a
        # word of its own); then three rates.
        assert len(values) == (3 if "Open Connection" in row else 1 + 3), row
        assert all(int(value) > 0 for value in values[-3:])


def test_history_as_csv_has_three_rates_per_cell(history_dir):
    done = subcommand("history", str(history_dir), "--format", "csv")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = done.stdout.splitlines()
    assert lines[0] == "database,concurrency,object_count,phase,first,second,third"
    assert len(lines) == 1 + len(PHASES)
    assert all(float(v) > 0 for line in lines[1:] for v in line.split(",")[4:])


def test_plots_of_a_history_and_of_two_runs(history_dir, tmp_path):
    pytest.importorskip("matplotlib")
    chart = tmp_path / "history.png"
    done = subcommand("plot", str(history_dir), "-o", str(chart))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert chart.read_bytes().startswith(b"\x89PNG")
    first, second, _third = saved_runs(history_dir)
    pair = tmp_path / "pair.png"
    done = subcommand("plot", str(first), str(second), "-o", str(pair))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert pair.read_bytes().startswith(b"\x89PNG")


def quiet_copy(path: pathlib.Path, target: pathlib.Path, slower: dict[str, float]) -> str:
    """A copy of a saved run with a quiet machine's timings, *slower* phases times slower.

    Every timing of a phase becomes the phase's median timing, 1% longer in
    repetition 2 and 2% in repetition 3.
    """
    document = json.loads(path.read_text())
    by_phase: dict[str, list[float]] = {}
    for row in document["measurements"]:
        by_phase.setdefault(row["phase"], []).append(row["seconds"])
    for row in document["measurements"]:
        median = statistics.median(by_phase[row["phase"]])
        spread = 1.0 + 0.01 * (row["repetition"] - 1)
        row["seconds"] = median * spread * slower.get(row["phase"], 1.0)
    target.write_text(json.dumps(document))
    return str(target)


def test_compare_fails_on_a_forced_slowdown_only_when_asked(history_dir, tmp_path):
    first = saved_runs(history_dir)[0]
    base = quiet_copy(first, tmp_path / "base.json", {})
    slower = quiet_copy(first, tmp_path / "slower.json", {"cold": 3.0})
    plain = subcommand("compare", base, slower)
    assert plain.returncode == 0, f"{plain.stdout}\n{plain.stderr}"
    cold = next(line for line in plain.stdout.splitlines() if "Cold" in line)
    assert "3.00x slower" in cold
    assert cold.split()[-4] == "slower"
    # The other phases are unchanged: inconclusive, whatever the noise was.
    add = next(line for line in plain.stdout.splitlines() if "Add" in line)
    assert add.split()[-4] == "inconclusive"
    strict = subcommand("compare", base, slower, "--fail-if-slower", "10")
    assert strict.returncode == 1, f"{strict.stdout}\n{strict.stderr}"
    assert "1 cell(s) significantly slower than the base by more than 10%" in strict.stderr
    assert "fs, cold, 20 objects, concurrency 1: 3.00x slower" in strict.stderr
    # A slowdown below the threshold passes (3x slower is 200% slower): these
    # quiet runs could have shown a 250% slowdown in every cell.
    lenient = subcommand("compare", base, slower, "--fail-if-slower", "250")
    assert lenient.returncode == 0, f"{lenient.stdout}\n{lenient.stderr}"


def test_compare_warns_about_runs_from_different_conditions(history_dir, tmp_path):
    first = saved_runs(history_dir)[0]
    document = json.loads(first.read_text())
    environment = document["metadata"]["environment"]
    environment["cpu_model"] = "Imaginary CPU 9000"
    environment["packages"]["ZODB"] = "4.0.0"
    document["metadata"]["options"]["object_size_bytes"] = 4096
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(document))
    done = subcommand("compare", str(first), str(edited), "--format", "markdown")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    warning = done.stderr.strip()
    assert warning.startswith("zodbshootout compare: warning: ")
    assert "different conditions: CPU model (" in warning
    assert "'Imaginary CPU 9000'" in warning
    assert "ZODB (" in warning
    assert "object size (128 vs 4096)" in warning
    assert "Python" not in warning
    assert done.stdout.startswith("| Database | Transaction |")
    quiet = subcommand("compare", str(first), str(edited), "-q")
    assert quiet.stderr == ""


def test_compare_of_runs_without_a_common_cell_is_an_error(history_dir, tmp_path, write_config):
    other_config = write_config(configs.filestorage("other"), name="other.conf")
    other = tmp_path / "other.json"
    done = run_cli(other_config, "-n", "20", "-c", "1", "-r", "1", "-q", "-o", str(other))
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    failed = subcommand("compare", str(saved_runs(history_dir)[0]), str(other))
    assert failed.returncode == 2
    assert "0 cells in common" in failed.stderr
    assert failed.stderr.count("\n") == 1


def test_show_metadata(history_dir):
    done = subcommand("show", str(saved_runs(history_dir)[1]), "--metadata")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    lines = dict(line.split(":", 1) for line in done.stdout.splitlines())
    assert lines["Label"].strip() == "second"
    assert "governor" in lines["CPU"]
    assert "(git " in lines["zodbshootout"]
    assert lines["Load at start"].strip().endswith("(1, 5, 15 min)")
    assert "ZODB " in lines["Packages"]


def test_a_config_named_like_a_subcommand_runs_as_a_path(tmp_path):
    (tmp_path / "show").write_text(configs.filestorage("fs"))
    as_path = run_cli("./show", "-n", "20", "-c", "1", "-r", "1", "-q", cwd=tmp_path)
    assert as_path.returncode == 0, f"{as_path.stdout}\n{as_path.stderr}"
    assert as_path.stdout.startswith('"Transaction",')
    as_subcommand = run_cli("show", "-n", "20", cwd=tmp_path)
    assert as_subcommand.returncode == 2
    assert "(to run the configuration file 'show', write ./show)" in as_subcommand.stderr


class TimedTerminal:
    """A terminal's stand-in for rich: keeps what is written and when."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.times: list[float] = []

    def write(self, text: str) -> int:
        self.text.append(text)
        self.times.append(time.monotonic())
        return len(text)

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return True


def test_a_real_run_redraws_its_progress_at_least_once_a_second(write_config, data_dir):
    """A run of several seconds whose stages take longer than a second each."""
    from rich.console import Console

    terminal = TimedTerminal()
    console = Console(file=terminal, force_terminal=True, width=160, color_system=None)
    config = load_config(write_config(configs.filestorage("fs")), data_dir)
    options = RunOptions(object_counts=(10000,), concurrencies=(1,), repetitions=1)
    started = time.monotonic()
    result = _run(config, options, quiet=False, console=console)
    finished = time.monotonic()
    assert result.complete
    duration = finished - started
    assert duration > 1.0  # longer than a redraw interval, even on a fast machine
    moments = [started, *terminal.times, finished]
    gaps = [b - a for a, b in itertools.pairwise(moments)]
    # rich's thread redraws four times a second. On a busy machine one redraw
    # came 1.03 s after the last (the suite on three workers, two cores): the
    # bound on a gap allows a hiccup, the count says the redraws kept coming.
    assert max(gaps) < 1.5, max(gaps)
    assert len(terminal.times) >= 2 * duration, (len(terminal.times), duration)
    screen = "".join(terminal.text)
    assert "fs (1/1) · 10000 objects · c=1 · repetition 1/1 · write" in screen
    assert "fs (1/1) · 10000 objects · c=1 · repetition 1/1 · read" in screen
    assert "left" in screen
    assert os.environ.get("ZODBSHOOTOUT_DATA") == data_dir
