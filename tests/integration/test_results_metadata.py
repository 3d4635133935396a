"""Run metadata: versions, machine, options, and a configuration without passwords."""

import json

from zodbshootout import __version__
from zodbshootout.options.run import RunOptions
from zodbshootout.results.metadata import environment, package_versions, run_metadata

CONFIG = """\
%define PASS s3cret!
<zodb pg>
  <relstorage>
    <postgresql>
      dsn dbname=zodb user=me password=$PASS host=db
    </postgresql>
  </relstorage>
</zodb>
<zodb my>
  <relstorage>
    <mysql>
      passwd hunter2
    </mysql>
  </relstorage>
</zodb>
"""


def test_passwords_are_redacted_from_the_recorded_configuration():
    recorded = json.dumps(run_metadata(RunOptions(), "/etc/x.conf", CONFIG))
    assert "s3cret!" not in recorded
    assert "hunter2" not in recorded
    assert "dbname=zodb user=me" in recorded


def test_options_are_plain_json():
    options = run_metadata(RunOptions(object_counts=(10, 20), repetitions=5), "c", "")["options"]
    assert options["object_counts"] == [10, 20]
    assert options["repetitions"] == 5
    assert options["aggregate"] == "mean"


def test_environment_names_versions_and_machine():
    found = environment()
    assert found["zodbshootout"] == __version__
    assert found["packages"]["ZODB"]
    assert found["cpu_count"] >= 1
    assert found["memory_bytes"] > 0
    assert found["cpu_model"]
    json.dumps(found)  # plain data only


def test_missing_package_is_none():
    assert package_versions(("surely-not-installed-zodbshootout-x",)) == {
        "surely-not-installed-zodbshootout-x": None
    }


def test_the_commit_of_this_checkout_and_the_hostname_are_recorded():
    import platform

    recorded = environment()
    assert recorded["hostname"] == platform.node()
    git = recorded["git"]
    assert len(git["commit"]) == 40
    assert git["source"] == "the checkout it is imported from"


def test_without_a_checkout_the_missing_commit_says_why(tmp_path, monkeypatch):
    from zodbshootout.results import metadata

    monkeypatch.setattr(metadata, "_pip_source", dict)  # pip recorded nothing
    installed = tmp_path / "site-packages" / "zodbshootout"
    git = metadata.git_commit(str(installed), cwd=str(tmp_path))
    assert git["commit"] is None
    assert git["reason"].startswith("installed without a record of its source commit")
