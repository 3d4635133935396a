"""The temporary data directory is removed whenever the run unwinds, even at its first step.

SIGTERM unwinds a run as an exception raised wherever the main thread is.
In a CI run one landed just after the directory was made, before the code
that removes it was in force, and the directory stayed behind.
"""

from __future__ import annotations

import os

import pytest

from zodbshootout.config import loader


@pytest.fixture(autouse=True)
def _temporary_directories_in_tmp_path(tmp_path, monkeypatch):
    """No $ZODBSHOOTOUT_DATA (restored afterwards, whatever a test leaves), tempfile in tmp_path."""
    monkeypatch.setenv(loader.DATA_DIR_VARIABLE, "")  # recorded, so that teardown restores it
    monkeypatch.delenv(loader.DATA_DIR_VARIABLE)
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))


def test_an_interruption_as_the_directory_is_made_leaves_nothing(tmp_path, monkeypatch):
    make_directory = os.mkdir

    def made_then_interrupted(path, *args, **kwargs):
        make_directory(path, *args, **kwargs)
        raise KeyboardInterrupt  # the signal's exception, right after the directory exists

    monkeypatch.setattr(os, "mkdir", made_then_interrupted)
    with pytest.raises(KeyboardInterrupt), loader.data_directory():
        pass
    assert list(tmp_path.iterdir()) == []


def test_the_directory_is_private_and_removed_after_use(tmp_path):
    with loader.data_directory() as where:
        assert os.path.isabs(where)
        assert os.path.dirname(where) == str(tmp_path)
        assert os.path.basename(where).startswith("zodbshootout-")
        assert os.stat(where).st_mode & 0o777 == 0o700
    assert list(tmp_path.iterdir()) == []


def test_a_name_already_taken_is_not_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(loader.secrets, "token_hex", lambda _n: "taken")
    theirs = tmp_path / "zodbshootout-taken"
    theirs.mkdir()
    (theirs / "keep").write_text("somebody else's")
    with pytest.raises(FileExistsError), loader.data_directory():
        pass
    assert (theirs / "keep").read_text() == "somebody else's"


def test_a_second_run_in_the_same_process_gets_a_temporary_directory_of_its_own(tmp_path):
    """Loading the configuration exports the directory for the workers; it goes with it."""
    config = tmp_path / "c.conf"
    config.write_text(
        "<zodb fs>\n  <filestorage>\n    path $(ZODBSHOOTOUT_DATA)/a.fs\n"
        "  </filestorage>\n</zodb>\n"
    )
    with loader.data_directory() as first:
        loader.load_config(str(config), first)
        assert os.environ[loader.DATA_DIR_VARIABLE] == first
    assert loader.DATA_DIR_VARIABLE not in os.environ
    with loader.data_directory() as second:
        assert second != first
    assert list(tmp_path.iterdir()) == [config]
