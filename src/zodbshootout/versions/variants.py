"""What a variant is: one or more requirements and a Python, and the name tables give it.

``--with 'ZEO==6.1'`` is a variant; ``--with 'old=ZEO==5.4.1,ZODB==5.8.1'``
one named ``old`` with two requirements (commas separate requirements as in
``uv run --with``; a comma followed by a version operator continues the
requirement before it, so ``ZEO>=6,<7`` stays one).  ``NAME @ PATH`` (a
checkout or a built distribution) becomes ``NAME @ file:///absolute/path``,
the form pip and uv both install.  ``--python`` given once applies to every
variant, given once per ``--with`` pairs with them in order, and given
without ``--with`` makes each Python a variant of its own (the tool's own
requirements on another interpreter).
"""

from __future__ import annotations

import os
import pathlib
import re
from dataclasses import dataclass
from urllib.parse import quote

from packaging.requirements import InvalidRequirement, Requirement

from zodbshootout.errors import UsageError

#: ``NAME=`` before a variant's requirements: a name, then one '=' (not '==').
_NAME = re.compile(r"^\s*(?P<name>[\w.+-][\w .+-]*?)\s*=(?!=)(?P<rest>.*)$", re.DOTALL)
#: A piece after a comma that continues the requirement before it (``<7`` in ``ZEO>=6,<7``).
_CONTINUES = re.compile(r"^\s*(===|==|!=|~=|<=|>=|<|>)")
#: A URL's scheme, which a local path does not have.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


@dataclass(frozen=True)
class Variant:
    """One environment to measure in: its requirements, its Python, its name.

    ``requirements`` are PEP 508 strings as the installer gets them (local
    paths as file URLs); ``python`` is the interpreter the user named, None
    for the one running zodbshootout; ``name`` is None until :func:`name_variants`.
    """

    requirements: tuple[str, ...]
    python: str | None = None
    name: str | None = None

    @property
    def local_paths(self) -> list[pathlib.Path]:
        """The local directories and files among the requirements (their contents key the cache)."""
        paths = []
        for text in self.requirements:
            url = Requirement(text).url or ""
            if url.startswith("file://"):
                paths.append(pathlib.Path(url.removeprefix("file://")))
        return paths


def split_requirements(text: str) -> list[str]:
    """The requirements of one ``--with``: split at commas outside brackets, except
    where the next piece starts with a version operator."""
    pieces: list[str] = []
    depth = 0
    current = ""
    for char in text:
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            pieces.append(current)
            current = ""
        else:
            current += char
    pieces.append(current)
    joined: list[str] = []
    for piece in pieces:
        if joined and _CONTINUES.match(piece):
            joined[-1] += "," + piece
        else:
            joined.append(piece)
    return [piece.strip() for piece in joined]


def parse_requirement(text: str, where: str) -> str:
    """One requirement as the installer gets it; a UsageError says what is wrong."""
    if not text:
        raise UsageError(f"{where}: an empty requirement (two commas, or one at an end?)")
    try:
        requirement = Requirement(text)
    except InvalidRequirement as e:
        raise UsageError(
            f"{where}: {text!r} is not a requirement (NAME==VERSION, NAME @ PATH or "
            f"NAME @ URL): {str(e).splitlines()[0]}"
        ) from None
    if requirement.url and not _SCHEME.match(requirement.url):
        return f"{_bare(requirement)} @ {_file_url(requirement.url, where)}"
    return text.strip()  # as the user wrote it (packaging would reorder ``>=6,<7``)


def _bare(requirement: Requirement) -> str:
    extras = f"[{','.join(sorted(requirement.extras))}]" if requirement.extras else ""
    return requirement.name + extras


def _file_url(path_text: str, where: str) -> str:
    path = pathlib.Path(os.path.expanduser(path_text)).resolve()
    if not path.exists():
        raise UsageError(f"{where}: {path_text} does not exist (a checkout or a distribution file)")
    return "file://" + quote(str(path))


def parse_variant(text: str, python: str | None = None) -> Variant:
    """A ``--with`` value: ``[NAME=]REQUIREMENT[,REQUIREMENT...]``."""
    where = f"--with {text!r}"
    name = None
    match = _NAME.match(text)
    if match:
        name, text = match["name"].strip(), match["rest"]
    requirements = tuple(parse_requirement(piece, where) for piece in split_requirements(text))
    return Variant(requirements, python, name)


def parse_python(text: str) -> Variant:
    """A ``--python`` value alone (no ``--with``): ``[NAME=]PYTHON``."""
    match = _NAME.match(text)
    if match and match["rest"].strip():
        return Variant((), match["rest"].strip(), match["name"].strip())
    return Variant((), text.strip())


def variants_from_options(withs: list[str], pythons: list[str]) -> list[Variant]:
    """The variants ``--with`` and ``--python`` describe (see the module's docstring)."""
    if not withs:
        variants = [parse_python(text) for text in pythons]
    elif len(pythons) <= 1:
        variants = [parse_variant(text, pythons[0] if pythons else None) for text in withs]
    elif len(pythons) == len(withs):
        variants = [
            parse_variant(text, python) for text, python in zip(withs, pythons, strict=True)
        ]
    else:
        raise UsageError(
            f"{len(pythons)} --python for {len(withs)} --with: give one --python for "
            "every variant, one per --with (in order), or one for all"
        )
    if len(variants) < 2:
        raise UsageError(
            "versions compares at least two variants: give --with twice (or more), "
            "or --python twice"
        )
    return variants


def short_requirement(text: str) -> str:
    """A requirement as a column heading: a local path's last part, not its whole URL."""
    requirement = Requirement(text)
    if requirement.url:
        tail = requirement.url.rstrip("/").rsplit("/", 1)[-1]
        return f"{_bare(requirement)} @ {tail}"
    return text.replace(" ", "")


def name_variants(variants: list[Variant], python_versions: list[str]) -> list[Variant]:
    """Every variant named: its own name, else its requirements, with its Python's
    version when that alone tells two apart; a number where names still clash."""
    names = []
    for variant, version in zip(variants, python_versions, strict=True):
        if variant.name:
            names.append(variant.name)
        elif variant.requirements:
            names.append(" ".join(short_requirement(r) for r in variant.requirements))
        else:
            names.append(f"Python {version}")
    given = list(names)
    for index, (variant, version) in enumerate(zip(variants, python_versions, strict=True)):
        if given.count(given[index]) > 1 and not variant.name and variant.requirements:
            names[index] = f"{names[index]} (Python {version})"
    clashing = {name for name in names if names.count(name) > 1}
    seen: dict[str, int] = {}
    for index, name in enumerate(names):
        if name in clashing:
            seen[name] = seen.get(name, 0) + 1
            names[index] = f"{name} #{seen[name]}"
    return [
        Variant(v.requirements, v.python, name) for v, name in zip(variants, names, strict=True)
    ]
