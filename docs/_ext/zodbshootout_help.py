"""Sphinx extension: the real ``zodbshootout --help``, and a check that every option is explained.

``.. zodbshootout-help::`` runs ``python -m zodbshootout --help`` (with the
Python that runs Sphinx, which must have zodbshootout installed) at build time
and inserts its output as a literal block; ``.. zodbshootout-help:: show``
does the same for ``zodbshootout show --help``.  The help text therefore
always matches the installed code.

After all pages are read, the extension compares the long options of each
program's help with the options documented by ``.. option::`` under the
matching ``.. program::``.  A long option without a description is a
warning, which ``sphinx-build -W`` turns into a failed build: a new option
cannot land without its documentation.
"""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

PROGRAM = "zodbshootout"

#: A fixed width, so that the page doesn't change with the terminal Sphinx runs in.
HELP_COLUMNS = "88"

#: Options every program has, which need no description of their own.
SELF_EXPLANATORY = frozenset({"--help"})

# An argparse option line starts with two spaces and a dash; its long options
# may be followed by a metavar (--output FILE.json) or a choice list.
_OPTION_LINE = re.compile(r"^ {2}-")
_LONG_OPTION = re.compile(r"(?<![\w-])(--[A-Za-z0-9][\w-]*)")


@functools.cache
def help_text(subcommand: str | None = None) -> str:
    """The output of ``zodbshootout [SUBCOMMAND] --help``; a failure stops the build."""
    command = [sys.executable, "-m", PROGRAM, *([subcommand] if subcommand else []), "--help"]
    env = dict(os.environ, COLUMNS=HELP_COLUMNS, NO_COLOR="1")
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    if done.returncode != 0:
        raise ExtensionError(
            f"{' '.join(command)} failed with exit code {done.returncode}: {done.stderr.strip()}"
        )
    return done.stdout


def long_options(text: str) -> list[str]:
    """The long options a help text offers, in order of appearance."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        if _OPTION_LINE.match(line):
            # Only the option column: the description may mention other options.
            column = re.split(r"\s{2,}", line.strip(), maxsplit=1)[0]
            for option in _LONG_OPTION.findall(column):
                found.setdefault(option)
    return list(found)


def subcommands() -> tuple[str, ...]:
    """The subcommands the installed zodbshootout has (none before they existed)."""
    try:
        from zodbshootout.cli.arguments import SUBCOMMANDS
    except ImportError:
        return ()
    return tuple(SUBCOMMANDS)


class HelpDirective(SphinxDirective):
    """``.. zodbshootout-help:: [SUBCOMMAND]``: the command's help as a literal block."""

    optional_arguments = 1
    option_spec = {"class": directives.class_option}

    def run(self) -> list[nodes.Node]:
        subcommand = self.arguments[0] if self.arguments else None
        if subcommand is not None and subcommand not in subcommands():
            raise self.error(f"zodbshootout has no subcommand {subcommand!r}")
        text = help_text(subcommand).rstrip("\n")
        block = nodes.literal_block(text, text)
        block["language"] = "text"
        self.set_source_info(block)
        self.env.note_dependency(__file__)
        return [block]


def check_options_documented(app: Sphinx, env: Any) -> None:
    """Warn about each long option of each program's help that no ``.. option::`` explains."""
    documented = set(env.get_domain("std").progoptions)
    programs = [(PROGRAM, None)] + [(f"{PROGRAM} {name}", name) for name in subcommands()]
    for program, subcommand in programs:
        # The std domain files "zodbshootout show" under "zodbshootout-show".
        key = re.sub(r"\s+", "-", program)
        for option in long_options(help_text(subcommand)):
            if option in SELF_EXPLANATORY or (key, option) in documented:
                continue
            logger.warning(
                "'%s' offers %s, but no '.. option::' under '.. program:: %s' explains it "
                "(add one to docs/options.rst)",
                program,
                option,
                program,
            )


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("zodbshootout-help", HelpDirective)
    app.connect("env-check-consistency", check_options_documented)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
