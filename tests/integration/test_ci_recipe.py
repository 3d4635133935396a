"""The CI recipe (etc/ci/versions-pull-request.yml) runs: its steps, here, make the comment.

The workflow is read with a YAML library, as GitHub reads it, and its
``run:`` steps run in order in a temporary directory with bash as GitHub
runs them (``bash --noprofile --norc -eo pipefail``), with the workflow's
and the step's environment.  What only GitHub has is substituted: the
checkouts are two ZEO releases' source distributions from the package
index (base 6.1, pull request 6.2) and this checkout; Python, uv and
zodbshootout are this test's own installation (the install step is checked
to be one, not run); ``gh`` is a program that keeps the comment's body;
``${{ ... }}`` expressions are the values of a pull request.  The runs are
made small (ROUNDS, RUN_OPTIONS, and CONFIG: one database of
etc/local.conf).  The comment must hold the Markdown comparison of the two
checkouts, and the last step must fail exactly when the comparison found a
cell slower than the threshold.
"""

from __future__ import annotations

import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

from conftest import ROOT
from support import configs

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (pip install -e '.[test]')")
uv = pytest.importorskip("uv", reason="uv is not installed (pip install -e '.[test]')")

pytestmark = [pytest.mark.slow, pytest.mark.zeo]

WORKFLOW = ROOT / "etc" / "ci" / "versions-pull-request.yml"
#: The two checkouts: the base and the pull request, as released source distributions.
RELEASES = {"base": "6.1", "pr": "6.2"}
#: Small runs: the recipe's own settings are for a CI runner's minutes (and one
#: database of etc/local.conf, ZEO over a FileStorage, instead of all three).
SMALL = {"ROUNDS": "2", "RUN_OPTIONS": "-n 20 -r 1 -c 1 cold", "CONFIG": "zeo.conf"}
#: A program called gh that keeps what `gh pr comment --body-file FILE` would post.
GH = """#!/bin/sh
while [ $# -gt 0 ]; do
  if [ "$1" = --body-file ]; then cp "$2" "$GH_POSTED"; fi
  shift
done
"""


def workflow() -> dict:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))


def test_the_workflow_is_one_job_that_posts_and_gates():
    jobs = workflow()["jobs"]
    assert list(jobs) == ["versions"]
    steps = jobs["versions"]["steps"]
    commands = "\n".join(step.get("run", "") for step in steps)
    assert "zodbshootout versions" in commands
    assert "--fail-if-slower" in commands
    assert "gh pr comment" in commands
    assert 'test "$STATUS" != 1' in steps[-1]["run"]  # 3 (inconclusive) does not fail


def unpack_release(version: str, into: pathlib.Path, downloads: pathlib.Path) -> None:
    """ZEO *version*'s source distribution, unpacked as a checkout at *into*."""
    subprocess.run(
        [sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
         "--disable-pip-version-check", "-q", "-d", str(downloads), f"ZEO=={version}"],
        check=True, timeout=300, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    archive = next(p for p in downloads.iterdir() if re.match(rf"(?i)zeo-{version}\.", p.name))
    shutil.unpack_archive(archive, downloads / version)
    (top,) = (downloads / version).iterdir()
    top.rename(into)


def expressions(outputs: dict[str, str]) -> dict[str, str]:
    """What GitHub puts in for each ``${{ ... }}`` of the workflow, for a pull request."""
    return {
        "github.event.pull_request.base.sha": "0" * 40,
        "github.event.pull_request.number": "1",
        "github.repository": "zopefoundation/ZEO",
        "github.token": "not-a-token",
        "runner.os": "Linux",
        "steps.measure.outputs.status": outputs.get("status", ""),
    }


def substituted(text: str, outputs: dict[str, str]) -> str:
    values = expressions(outputs)

    def value(match: re.Match[str]) -> str:
        expression = match[1].strip()
        assert expression in values, f"the test knows no value for ${{{{ {expression} }}}}"
        return values[expression]

    return re.sub(r"\$\{\{(.*?)\}\}", value, text)


def github_part(step: dict, workspace: pathlib.Path, downloads: pathlib.Path) -> None:
    """Do what a ``uses:`` step does, where the recipe needs it done."""
    action = step["uses"].split("@")[0]
    path = (step.get("with") or {}).get("path")
    if action == "actions/checkout":
        if path == "zodbshootout":
            (workspace / path).symlink_to(ROOT)
        else:
            unpack_release(RELEASES[path], workspace / path, downloads)
    elif action == "actions/upload-artifact":
        assert (workspace / path).is_file(), f"nothing to upload at {path}"
    else:
        assert action in ("actions/setup-python", "actions/cache"), action


def run_steps(workspace: pathlib.Path, downloads: pathlib.Path) -> tuple[dict, list]:
    """Every step in order; GITHUB_OUTPUT's values, and each run step's (name, exit code)."""
    document = workflow()
    bin_dir = workspace.parent / "bin"
    bin_dir.mkdir()
    (bin_dir / "gh").write_text(GH)
    (bin_dir / "gh").chmod(0o755)
    path = os.pathsep.join(
        [str(bin_dir), str(pathlib.Path(sys.executable).parent),
         os.path.dirname(uv.find_uv_bin()), os.environ.get("PATH", "")]
    )  # fmt: skip
    outputs: dict[str, str] = {}
    ran = []
    for step in document["jobs"]["versions"]["steps"]:
        if "uses" in step:
            github_part(step, workspace, downloads)
            continue
        if step["name"] == "Install zodbshootout":
            # This test's own environment is that install: zodbshootout from this checkout.
            assert "pip install -e ./zodbshootout" in step["run"]
            continue
        output_file = workspace.parent / "github-output"
        output_file.write_text("")
        env = {
            **{k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"},
            **{k: str(v) for k, v in document["env"].items()},
            **SMALL,
            **{k: substituted(str(v), outputs) for k, v in (step.get("env") or {}).items()},
            "PATH": path,
            "GITHUB_OUTPUT": str(output_file),
            "GH_POSTED": str(workspace.parent / "posted.md"),
        }
        done = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c",
             substituted(step["run"], outputs)],
            cwd=workspace, env=env, capture_output=True, text=True, timeout=900,
        )  # fmt: skip
        ran.append((step["name"], done.returncode, done.stdout + done.stderr))
        for line in output_file.read_text().splitlines():
            name, _, value = line.partition("=")
            outputs[name] = value
    return outputs, ran


def test_the_recipes_steps_post_the_markdown_comparison(tmp_path):
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    (workspace / "zeo.conf").write_text("%import zodbshootout\n" + configs.embedded_zeo("zeo_fs"))
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    outputs, ran = run_steps(workspace, downloads)
    names = [name for name, _code, _output in ran]
    assert names == [
        "Measure the base and the pull request, interleaved",
        "Write the comment",
        "Post the comment",
        "Fail on a slowdown the run could see",
    ]
    status = outputs["status"]
    assert status in ("0", "1", "3"), ran[0][2]
    assert all(code == 0 for _name, code, _output in ran[:3]), ran
    posted = (tmp_path / "posted.md").read_text()
    assert posted.startswith("### zodbshootout: this pull request against its base")
    # The variants' table: each checkout's exact ZEO, then the comparison.
    assert re.search(
        r"^\| base \| 3\.\d+\.\d+ \| 6\.1 \| uv [\d.]+, built in \d+ s \|$", posted, re.M
    )
    assert re.search(
        r"^\| pr \| 3\.\d+\.\d+ \| 6\.2 \| uv [\d.]+, built in \d+ s \|$", posted, re.M
    )
    assert (
        "| Database | Transaction | base | pr | Change | Verdict | p | Holm p | Detectable |"
        in posted
    )
    assert re.search(r"^\| zeo_fs \| Read 20 Cold Objects \| \d+", posted, re.M)
    assert "change is pr relative to base" in posted
    # The job fails on a slowdown the run could see, and on nothing else.
    assert (ran[-1][1] != 0) == (status == "1")
