"""--log and --leaks through the command: the workers log and count, the parent reports."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import ETC, run_cli
from support import configs

SQLITE = configs.sqlite("sqlite")


def test_log_level_turns_on_logging_in_the_parent_and_every_worker():
    run = [str(ETC / "local.conf"), "-n", "10", "-c", "2", "-r", "1", "add", "--log", "INFO", "-q"]
    done = run_cli(*run, own_process=True)  # the workers log to the command's stderr
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    processes = {line.split()[2] for line in done.stderr.splitlines() if " INFO: " in line}
    assert {"MainProcess", "zodbshootout-worker-0", "zodbshootout-worker-1"} <= processes
    assert any("ZEO.ClientStorage" in line for line in done.stderr.splitlines())


def test_leaks_reports_growth_per_phase_in_notes(write_config):
    done = run_cli(
        write_config(SQLITE), "-n", "40", "-c", "1", "-r", "1", "add", "cold", "--leaks", "-q"
    )
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    notes = [line for line in done.stdout.splitlines() if line.startswith("Note: leaks:")]
    assert [note.split("(")[0] for note in notes] == [
        "Note: leaks: sqlite add ",
        "Note: leaks: sqlite cold ",
    ]
    # A cold read in a fresh reader process creates the N objects it loads,
    # which stay in the pickle cache: the growth the note shows.
    assert "zodbshootout.workload.objects.BenchmarkObject +40" in notes[1]


def test_without_leaks_there_are_no_leak_notes(write_config):
    done = run_cli(write_config(SQLITE), "-n", "10", "-c", "1", "-r", "1", "add", "-q")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    assert "leaks:" not in done.stdout


def test_zconfig_logging_file_routes_records_and_masks_passwords(tmp_path):
    """Run in a fresh interpreter: configuring logging changes process-wide state."""
    log = tmp_path / "out.log"
    conf = tmp_path / "log.conf"
    conf.write_text(
        textwrap.dedent(f"""\
        <logger>
          name relstorage
          level DEBUG
          <logfile>
            path {log}
            format %(name)s %(message)s
          </logfile>
        </logger>
    """)
    )
    script = textwrap.dedent(f"""\
        import logging
        from zodbshootout.probes import diagnostics
        setup = diagnostics.parse_log_option({str(conf)!r})
        diagnostics.configure_logging(setup, {{"s3cret"}})
        diagnostics.configure_logging(setup, {{"s3cret"}})  # again: no second handler
        logging.getLogger("relstorage.adapters").debug("connecting with password s3cret")
        logging.getLogger("ZODB").warning("not configured, not in the file")
    """)
    subprocess.run([sys.executable, "-c", script], check=True, capture_output=True)
    assert log.read_text().splitlines() == ["relstorage.adapters connecting with password ***"]
