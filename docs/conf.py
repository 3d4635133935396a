"""Sphinx configuration of zodbshootout's documentation.

Build it with ``sphinx-build -W docs docs/_build`` from the top of a checkout,
with zodbshootout installed in the Python that runs Sphinx (``pip install -e
'.[docs]'``): the options page runs ``zodbshootout --help`` at build time.
Nothing is fetched from the network (no intersphinx).
"""

from __future__ import annotations

import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))

from zodbshootout import __version__  # noqa: E402

project = "zodbshootout"
author = "the zodbshootout contributors"
copyright = "the zodbshootout contributors; ZPL 2.1"
release = __version__
version = ".".join(__version__.split(".")[:2])

extensions = ["zodbshootout_help"]

# CHANGES.rst and the example files are included from other pages.
exclude_patterns = ["_build", "examples/*.rst", "examples/*.txt"]
templates_path: list[str] = []
root_doc = "index"
nitpicky = True
highlight_language = "text"

html_theme = "alabaster"
html_title = f"zodbshootout {release}"
html_theme_options = {
    "description": "How fast does your ZODB storage add, update and read objects?",
    "fixed_sidebar": True,
}
html_static_path: list[str] = []
