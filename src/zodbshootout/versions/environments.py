"""One virtual environment per variant: found in the cache, or built once and recorded.

An environment holds the variant's requirements, zodbshootout's own
requirements except those on a package the variant names (the variant's
pin wins: ``ZEO==5.4.1`` replaces the tool's ``ZEO >= 6.0``), and
zodbshootout itself, installed from the checkout this program runs from in
editable mode, so every variant runs the same harness code.  A build that
fails removes what it made and ends in one line naming the installer's
reason; its installed packages are read from the environment itself
(``importlib.metadata`` run by its Python), each time it is used.
"""

from __future__ import annotations

import hashlib
import json
import os
import pathlib
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata as importlib_metadata
from typing import Any

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

import zodbshootout
from zodbshootout.errors import UsageError
from zodbshootout.versions import cache
from zodbshootout.versions.installers import Installer
from zodbshootout.versions.interpreter import Interpreter
from zodbshootout.versions.variants import Variant

#: Run inside an environment: every installed distribution and its version.
_LIST_PACKAGES = (
    "import json, importlib.metadata as m; print(json.dumps(sorted("
    "{(d.metadata['Name'] or '?'): d.version for d in m.distributions()}.items(), "
    "key=lambda item: item[0].lower())))"
)
#: Folders of a local checkout whose contents don't change what gets installed.
_SKIPPED_FOLDERS = {".git", ".hg", "__pycache__", "build", "dist", ".tox", ".nox", ".venv"}


class BuildError(UsageError):
    """An environment could not be built: one line, and the installer's output for --debug."""

    def __init__(self, message: str, output: str = "") -> None:
        super().__init__(message)
        self.output = output


@dataclass(frozen=True)
class Environment:
    """A variant's ready environment."""

    variant: Variant
    interpreter: Interpreter
    key: str
    directory: pathlib.Path  # the cache entry
    python: pathlib.Path  # the environment's interpreter
    installer: str  # the installer that built it, with its version
    built: bool  # built by this invocation; False: found in the cache
    build_seconds: float | None
    packages: dict[str, str]


def tool_checkout() -> pathlib.Path:
    """The zodbshootout checkout this program runs from (installed into every variant)."""
    root = pathlib.Path(zodbshootout.__file__).resolve().parents[2]
    project = root / "pyproject.toml"
    try:
        is_checkout = 'name = "zodbshootout"' in project.read_text(encoding="utf-8")
    except OSError:
        is_checkout = False
    if not is_checkout:
        raise UsageError(
            "versions installs zodbshootout from its checkout into each environment, but "
            f"this zodbshootout runs from {root}, which is not one: run it from a "
            "checkout (pip install -e .)"
        )
    return root


def tool_requirements(extras: tuple[str, ...] = ()) -> list[str]:
    """zodbshootout's own requirements, with those of *extras* (their markers dropped)."""
    declared = [Requirement(text) for text in importlib_metadata.requires("zodbshootout") or []]
    wanted = set(extras)
    while True:  # an extra may name others of the tool's (``all``): follow them
        named = {
            extra
            for requirement in declared
            if _is_tool(requirement) and _selected(requirement, wanted)
            for extra in requirement.extras
        }
        if named <= wanted:
            break
        wanted |= named
    found: list[str] = []
    for requirement in declared:
        if _is_tool(requirement) or not _selected(requirement, wanted):
            continue
        requirement.marker = None
        if str(requirement) not in found:
            found.append(str(requirement))
    return found


def _is_tool(requirement: Requirement) -> bool:
    return canonicalize_name(requirement.name) == "zodbshootout"


def _selected(requirement: Requirement, extras: set[str]) -> bool:
    marker = requirement.marker
    return marker is None or any(marker.evaluate({"extra": extra}) for extra in extras)


def requirements_of(variant: Variant, extras: tuple[str, ...] = ()) -> list[str]:
    """What a variant's environment gets: the tool's requirements the variant does not
    override, then the variant's own."""
    named = {canonicalize_name(Requirement(text).name) for text in variant.requirements}
    kept = [
        text
        for text in tool_requirements(extras)
        if canonicalize_name(Requirement(text).name) not in named
    ]
    return [*kept, *variant.requirements]


#: Files larger than this are fingerprinted by size and modification time, not read.
_MAX_HASHED_BYTES = 16 << 20


def fingerprint(path: pathlib.Path) -> str:
    """A hash of a local checkout's (or file's) file names and contents.

    Contents, not modification times: a fresh clone of the same commit (a CI
    job's) finds the environment an earlier clone built.
    """
    digest = hashlib.sha256()
    if path.is_file():
        files = [path]
    else:
        files = []
        for folder, subfolders, names in os.walk(path):
            subfolders[:] = sorted(
                s for s in subfolders if s not in _SKIPPED_FOLDERS and not s.endswith(".egg-info")
            )
            files += [pathlib.Path(folder) / name for name in sorted(names)]
    for file in files:
        relative = file.relative_to(path) if file != path else pathlib.Path(file.name)
        digest.update(f"{relative}\0".encode())
        try:
            facts = file.stat()
            if facts.st_size > _MAX_HASHED_BYTES:
                digest.update(f"{facts.st_size}:{facts.st_mtime_ns}".encode())
            else:
                digest.update(hashlib.sha256(file.read_bytes()).digest())
        except OSError:
            digest.update(b"unreadable")
    return digest.hexdigest()


def environment_facts(
    variant: Variant, interpreter: Interpreter, installer: Installer, extras: tuple[str, ...]
) -> dict[str, Any]:
    """Everything that decides what an environment holds: its cache key is their hash."""
    return {
        "requirements": requirements_of(variant, extras),
        "python": [interpreter.executable, interpreter.version, interpreter.implementation],
        "installer": installer.name,
        "checkout": str(tool_checkout()),
        "local": {str(path): fingerprint(path) for path in variant.local_paths},
    }


def prepare(
    variant: Variant,
    interpreter: Interpreter,
    installer: Installer,
    top: pathlib.Path,
    extras: tuple[str, ...] = (),
    rebuild: bool = False,
    report: Callable[[str], None] = lambda message: None,
) -> Environment:
    """The variant's environment from the cache at *top*, built first if it isn't there."""
    facts = environment_facts(variant, interpreter, installer, extras)
    key = cache.environment_key(facts)
    entry = cache.environments_directory(top) / key
    with cache.locked(entry):
        if rebuild or not cache.is_complete(entry):
            report(
                f"{variant.name}: building its environment with {installer.name} "
                f"(Python {interpreter.version}) in {entry}"
            )
            started = time.monotonic()
            _build(entry, facts, variant, interpreter, installer)
            seconds = time.monotonic() - started
            report(f"{variant.name}: built in {seconds:.1f} s")
        else:
            seconds = None
            report(f"{variant.name}: environment found in the cache ({entry})")
        record = cache.read_record(entry)
    python = entry / "venv" / "bin" / "python"
    return Environment(
        variant,
        interpreter,
        key,
        entry,
        python,
        str(record.get("installer") or installer.name),
        seconds is not None,
        seconds,
        installed_packages(python),
    )


def _build(
    entry: pathlib.Path,
    facts: dict[str, Any],
    variant: Variant,
    interpreter: Interpreter,
    installer: Installer,
) -> None:
    """Make the environment from scratch; on any failure, leave nothing behind."""
    cache.remove_entry(entry)
    venv = entry / "venv"
    python = venv / "bin" / "python"
    try:
        entry.mkdir(parents=True)
        _step(variant, "making the environment", installer.create(interpreter.executable, venv))
        _step(variant, "installing", installer.install(python, facts["requirements"]))
        _step(
            variant,
            "installing zodbshootout",
            installer.install(python, ["--no-deps", "--editable", facts["checkout"]]),
        )
        record = {
            **facts,
            "variant": variant.name,
            "installer": installer.version(python),
            "built": time.time(),
        }
        cache.mark_complete(entry, record)
    except BaseException:
        cache.remove_entry(entry)
        raise


def _step(variant: Variant, what: str, command: list[str]) -> None:
    environment = {**os.environ, "UV_PYTHON_DOWNLOADS": "never", "PIP_NO_INPUT": "1"}
    try:
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            stdin=subprocess.DEVNULL,
            env=environment,
        )
    except OSError as e:
        raise BuildError(f"{variant.name}: {what} failed: {command[0]}: {e.strerror}") from None
    if done.returncode != 0:
        raise BuildError(
            f"{variant.name}: {what} failed: {decisive_line(done.stdout)}", done.stdout
        )


#: The lines of an installer's output that say why it failed: pip's ERROR lines,
#: uv's error and its tree of reasons.
_ERROR_LINE = re.compile(r"^\s*(ERROR:|error:|×|╰─▶|help:)")
_MAX_REASON_CHARS = 400


#: What pip and uv say when the package index can't be reached.
_NETWORK = re.compile(
    r"Failed to establish a new connection|Connection refused|Network is unreachable|"
    r"Name or service not known|Temporary failure in name resolution|error sending request|"
    r"dns error|Read timed out|ConnectTimeoutError",
    re.IGNORECASE,
)


def decisive_line(output: str) -> str:
    """Why an installer failed, in one line (its last error, or its last line); a
    package index that could not be reached is said first."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    unreachable = next((line for line in lines if _NETWORK.search(line)), None)
    if unreachable:
        return _shortened(f"the package index could not be reached ({unreachable})")
    errors = [line for line in lines if _ERROR_LINE.match(line)]
    pip_errors = [line for line in errors if line.startswith("ERROR:")]
    if pip_errors:
        reason = pip_errors[-1]
        if any("(from versions: none)" in line for line in pip_errors):
            reason += (
                " (the package index offers none: a misspelt name, or an index "
                "that can't be reached)"
            )
    elif errors:
        reason = " ".join(re.sub(r"^(×|╰─▶)\s*", "", line) for line in errors)
    else:
        reason = lines[-1] if lines else "no output"
    return _shortened(reason)


def _shortened(reason: str) -> str:
    reason = " ".join(reason.split())
    if len(reason) > _MAX_REASON_CHARS:
        reason = reason[: _MAX_REASON_CHARS - 1] + "…"
    return reason


def installed_packages(python: pathlib.Path) -> dict[str, str]:
    """Every distribution installed in an environment and its version, as it says itself."""
    try:
        done = subprocess.run(
            [str(python), "-c", _LIST_PACKAGES],
            capture_output=True,
            text=True,
            timeout=120,
            stdin=subprocess.DEVNULL,
        )
        pairs = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        raise UsageError(
            f"the environment {python.parent.parent} does not run: clear it "
            "(zodbshootout versions --clear-cache) and build it again"
        ) from None
    return dict(pairs)
