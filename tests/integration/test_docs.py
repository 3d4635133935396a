"""The documentation builds without warnings and explains every option ``--help`` offers."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys

import pytest

from conftest import ROOT, run_cli

pytestmark = pytest.mark.slow

DOCS = ROOT / "docs"
LONG_OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*)")


def long_options(help_text: str) -> list[str]:
    """The long options of an argparse help text (option column only), --help excluded."""
    found: dict[str, None] = {}
    for line in help_text.splitlines():
        if re.match(r"^ {2}-", line):
            column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            found.update(dict.fromkeys(LONG_OPTION.findall(column)))
    found.pop("--help", None)
    return list(found)


def subcommands() -> tuple[str, ...]:
    try:
        from zodbshootout.cli.arguments import SUBCOMMANDS
    except ImportError:
        return ()
    return tuple(SUBCOMMANDS)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """The HTML build directory of ``sphinx-build -W docs``."""
    pytest.importorskip("sphinx", reason="Sphinx is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("docs")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "-q",
            "-b",
            "html",
            "-d",
            str(out / "doctrees"),
            str(DOCS),
            str(out / "html"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        env={k: v for k, v in os.environ.items() if k != "ZODBSHOOTOUT_DATA"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out / "html"


def page_text(path) -> str:
    """The visible text of an HTML page."""
    return html.unescape(re.sub(r"<[^>]+>", "", path.read_text(encoding="utf-8")))


def test_long_option_parser_reads_argparse_help():
    text = (
        "usage: prog [-h] [--alpha A]\n\noptions:\n"
        "  -h, --help            show this help message and exit\n"
        "  -a A, --alpha A       alpha; unlike --not-an-option\n"
        "  --beta-gamma [{x,y}]\n"
        "                        --also-not, a continuation line\n"
    )
    assert long_options(text) == ["--alpha", "--beta-gamma"]


@pytest.mark.parametrize("subcommand", [None, *subcommands()])
def test_every_long_option_is_explained_on_the_options_page(built, subcommand):
    done = run_cli(*([subcommand] if subcommand else []), "--help")
    assert done.returncode == 0, f"{done.stdout}\n{done.stderr}"
    options = long_options(done.stdout)
    assert options, done.stdout
    page = (built / "options.html").read_text(encoding="utf-8")
    text = page_text(built / "options.html")
    program = "zodbshootout" + (f"-{subcommand}" if subcommand else "")
    for option in options:
        assert option in text, f"{option} is not on the options page"
        # An ``.. option::`` entry of its own, not only the pasted --help.
        assert f'id="cmdoption-{program}-{option.lstrip("-")}"' in page, (
            f"{program.replace('-', ' ')} {option} has no '.. option::' in docs/options.rst"
        )


def test_options_page_holds_the_current_help_text(built):
    help_line = run_cli("--help").stdout.splitlines()[0]
    assert help_line.startswith("usage: zodbshootout")
    assert "usage: zodbshootout" in page_text(built / "options.html")


def test_changelog_and_example_results_are_in_the_docs(built):
    changes = page_text(built / "changes.html").replace("\u2019", "'")  # Sphinx's smart quotes
    first_bullet = (ROOT / "CHANGES.rst").read_text(encoding="utf-8").split("- ", 2)[1]
    assert " ".join(first_bullet.split()[:6]).replace("``", "") in " ".join(changes.split())
    results = page_text(built / "results.html")
    table = (DOCS / "examples" / "local.txt").read_text(encoding="utf-8")
    assert table.splitlines()[0] in results
    assert (built / "_images" / "local.png").is_file()
