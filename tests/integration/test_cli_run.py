"""The command as a user runs it: the classic table, blocks, profiles, footnotes, errors."""

from __future__ import annotations

import pstats
import re

from conftest import ETC, run_cli, without_busy_warning
from support import configs

ROW = re.compile(r'^"(?P<label>[^"]+)",\s+(?P<cells>.*)$')


def parse_table(stdout: str) -> dict[str, list[list[str]]]:
    """Blocks of rows (label, cells...) keyed by their ``** concurrency=N **`` header."""
    blocks: dict[str, list[list[str]]] = {}
    current = "default"
    for line in stdout.splitlines():
        if line.startswith("** concurrency="):
            current = line.strip("* ")
            continue
        match = ROW.match(line)
        if match and match["label"] != "Transaction":
            cells = [c.strip() for c in match["cells"].split(",")]
            blocks.setdefault(current, []).append([match["label"], *cells])
    return blocks


def test_local_conf_prints_seven_rows_of_three_positive_rates():
    done = run_cli(str(ETC / "local.conf"), "-n", "60", "-r", "1")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    header = done.stdout.splitlines()[0]
    assert [h.strip() for h in header.split(",")] == [
        '"Transaction"',
        "zeo_fs",
        "sqlite",
        "zeo_pcache",
    ]
    rows = parse_table(done.stdout)["default"]
    assert [row[0] for row in rows] == [
        "Add 60 Objects",
        "Update 60 Objects",
        "Read 60 Warm Objects",
        "Read 60 Cold Objects",
        "Read 60 Prefetched Cold Objects",
        "Read 60 Hot Objects",
        "Read 60 Steamin' Objects",
        "Open Connection (n=60)",
    ]
    for row in rows:
        assert len(row) == 4
        assert all(cell.isdigit() and int(cell) > 0 for cell in row[1:]), row
    # Progress went to stderr, not into the table.
    assert "repetition 1/1" in done.stderr
    assert "repetition" not in done.stdout


def test_concurrency_levels_make_blocks_and_phases_select_rows():
    done = run_cli(str(ETC / "local.conf"), "-n", "30", "-c", "1,2", "-r", "1", "cold", "hot", "-q")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert without_busy_warning(done.stderr) == ""
    blocks = parse_table(done.stdout)
    assert list(blocks) == ["concurrency=1", "concurrency=2"]
    for rows in blocks.values():
        assert [row[0] for row in rows] == ["Read 30 Cold Objects", "Read 30 Hot Objects"]


def test_profiles_load_in_pstats(tmp_path, write_config):
    config = write_config(configs.sqlite("sqlite"))
    profiles = tmp_path / "profiles"
    done = run_cli(
        config, "-n", "20", "-c", "2", "-r", "1", "-p", str(profiles), "add", "cold", "-q"
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    names = sorted(p.name for p in profiles.glob("*.prof"))
    assert names == [
        # The warm-up (repetition 0) is not profiled.
        "sqlite-n20-c2-r1-add-w0.prof",
        "sqlite-n20-c2-r1-add-w1.prof",
        "sqlite-n20-c2-r1-cold-w0.prof",
        "sqlite-n20-c2-r1-cold-w1.prof",
    ]
    for name in names:
        stats = pstats.Stats(str(profiles / name))
        assert stats.total_calls > 0
        assert (profiles / name).with_suffix(".txt").read_text().strip()


def test_filestorage_with_two_processes_says_why_in_a_footnote(write_config):
    config = write_config(configs.filestorage("fs"))
    done = run_cli(config, "-n", "20", "-c", "1,2", "-r", "1", "add", "steamin", "-q")
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert "Traceback" not in done.stderr
    blocks = parse_table(done.stdout)
    assert all(row[1].isdigit() for row in blocks["concurrency=1"])
    assert all(row[1] == "n/a[1]" for row in blocks["concurrency=2"])
    assert "[1] fs (concurrency 2): FileStorage can be opened by only one process" in done.stdout


def test_config_typo_is_one_line_naming_file_and_line(write_config):
    config = write_config("""\
        <zodb fs>
          <filestorage>
            pth /tmp/x.fs
          </filestorage>
        </zodb>
    """)
    done = run_cli(config)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"zodbshootout: error: {config}:3: ")


def test_unknown_phase_is_a_usage_error():
    done = run_cli(str(ETC / "local.conf"), "chilly")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "zodbshootout: error: unknown phase 'chilly'; choose from "
        "add, update, warm, cold, prefetch, hot, steamin, open, new_oid, store, tpc, commit, "
        "readcurrent, conflicts, readcurrent_conflicts or all"
    ]
