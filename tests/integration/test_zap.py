"""--zap, --pack and --min-objects through the command, on databases with foreign data.

The prompt must default to no: an empty answer on a terminal, end of input,
and a standard input that is not a terminal all leave the data as it was.
"""

from __future__ import annotations

import os
import pty
import subprocess
import sys

import pytest
import ZODB

from zodbshootout.config.loader import load_config
from zodbshootout.database.state import FILLER_KEY
from zodbshootout.workload.root import ROOT_KEY

from conftest import run_cli

CONFIG = """
    <zodb fs>
      <filestorage>
        path {data}/data.fs
      </filestorage>
    </zodb>
    <zodb sqlite>
      <relstorage>
        <sqlite3>
          data-dir {data}/sqlite
        </sqlite3>
      </relstorage>
    </zodb>
"""


@pytest.fixture
def databases(tmp_path, write_config):
    """A configuration whose two databases hold a user's data: root['precious']."""
    data = tmp_path / "userdata"
    data.mkdir()
    path = write_config(CONFIG.format(data=data))
    for name in ("fs", "sqlite"):
        with open_db(path, name) as db, db.transaction() as conn:
            conn.root()["precious"] = "the user's data"
    return path


class open_db:
    def __init__(self, config_path: str, name: str) -> None:
        self.db = ZODB.DB(load_config(config_path).databases[name].config.storage.open())

    def __enter__(self):
        return self.db

    def __exit__(self, *exc_info):
        self.db.close()


def root_of(config_path: str, name: str) -> dict:
    with open_db(config_path, name) as db, db.transaction() as conn:
        return {key: conn.root()[key] for key in conn.root()}


def assert_intact(config_path: str) -> None:
    for name in ("fs", "sqlite"):
        assert root_of(config_path, name) == {"precious": "the user's data"}, name


def run_on_terminal(args: list[str], answer: bytes, timeout: float = 120):
    """Run the command with a pseudo-terminal as stdin and *answer* typed in advance."""
    main, secondary = pty.openpty()
    try:
        os.write(main, answer)
        done = subprocess.run(
            [sys.executable, "-m", "zodbshootout", *args],
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    finally:
        os.close(secondary)
        os.close(main)
    return done


ARGS = ["-n", "10", "-c", "1", "-r", "1", "add", "-q"]


@pytest.mark.parametrize("stdin", ["\n", ""], ids=["empty-line", "eof"])
def test_zap_with_a_piped_empty_answer_or_eof_deletes_nothing(databases, stdin):
    done = run_cli(databases, *ARGS, "--zap", input_text=stdin)
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert "not zapping fs: standard input is not a terminal" in done.stderr
    assert "if you are sure its data may be erased: zodbshootout CONFIG --zap sqlite" in done.stderr
    assert_intact(databases)


def test_zap_with_an_empty_answer_at_the_terminal_prompt_deletes_nothing(databases):
    done = run_on_terminal([databases, *ARGS, "--zap"], b"\n\n")
    assert done.returncode == 2, f"{done.stdout}\n{done.stderr}"
    assert done.stderr.count("[y/N]") == 2
    assert_intact(databases)


def test_zap_answered_yes_at_the_prompt_zaps_only_that_database(databases):
    done = run_on_terminal([databases, *ARGS, "--zap=sqlite"], b"y\n")
    assert done.returncode == 1, done.stderr  # fs is still refused
    assert done.stderr.count("[y/N]") == 1
    assert "Zap database sqlite?" in done.stderr
    assert "precious" not in root_of(databases, "sqlite")
    assert root_of(databases, "fs") == {"precious": "the user's data"}


def test_zap_force_makes_every_database_usable(databases):
    done = run_cli(databases, *ARGS, "--zap", "force")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "Note: fs: zapped before the run: emptied its root and packed" in done.stdout
    assert "Note: sqlite: zapped before the run: emptied its tables (zap_all)" in done.stdout
    for name in ("fs", "sqlite"):
        assert list(root_of(databases, name)) == [ROOT_KEY]


def test_zap_force_with_a_name_zaps_only_that_one_without_asking(databases):
    done = run_cli(databases, *ARGS, "--zap=force,fs", input_text="")
    assert done.returncode == 1, f"{done.stdout}\n{done.stderr}"
    assert "[y/N]" not in done.stderr
    assert list(root_of(databases, "fs")) == [ROOT_KEY]
    assert root_of(databases, "sqlite") == {"precious": "the user's data"}


def test_zap_of_a_name_not_in_the_configuration_is_a_usage_error(databases):
    done = run_cli(databases, *ARGS, "--zap=sqlite3")
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "zodbshootout: error: --zap names 'sqlite3', which is not a database of the "
        "configuration (databases: fs, sqlite); --zap takes the word after it as its "
        "value, so put it last or write --zap=NAME,..."
    ]
    assert_intact(databases)


def test_min_objects_are_written_once_and_kept(databases):
    args = [*ARGS, "--zap=force"]
    assert run_cli(databases, *args, "--min-objects", "1500").returncode == 0
    done = run_cli(databases, *ARGS, "-r", "2", "--min-objects", "1200")
    assert done.returncode == 0, done.stderr + done.stdout
    for name in ("fs", "sqlite"):
        with open_db(databases, name) as db, db.transaction() as conn:
            top = conn.root()[ROOT_KEY]
            assert len(top[FILLER_KEY]) == 1500, name
            assert top[FILLER_KEY][1499].payload.startswith(b"-1:1499:0;")


def test_pack_on_the_embedded_storages_succeeds(write_config):
    from conftest import ETC

    done = run_cli(str(ETC / "local.conf"), *ARGS, "--pack", "--min-objects", "100")
    assert done.returncode == 0, done.stderr + done.stdout
    assert "not packed" not in done.stdout


def test_pack_will_not_replace_a_users_filestorage_backup(databases, tmp_path):
    assert run_cli(databases, *ARGS, "--zap=force,fs").returncode == 1
    backup = tmp_path / "userdata" / "data.fs.old"
    assert backup.exists()  # the zap packed
    before = backup.read_bytes()
    done = run_cli(databases, *ARGS, "--pack")
    assert "Note: fs: not packed: packing would replace" in done.stdout
    assert backup.read_bytes() == before
