"""Read a ZConfig file that lists the databases to measure.

The file holds ``<zodb NAME>`` sections (ZODB's database section type); their
names are the table's columns, in file order.  The RelStorage component and
this tool's own component (``<embeddedzeo>``) are always available, so
``%import relstorage`` and ``%import zodbshootout`` are optional.

Embedded storages keep their files below ``$(ZODBSHOOTOUT_DATA)``, an
environment variable that the tool points at a fresh temporary directory
unless the user has set it.

Workers do not receive parsed objects: they get a :class:`ConfigSource` (the
file's text, its URL and the data directory) and parse it again themselves.
"""

from __future__ import annotations

import contextlib
import io
import os
import pathlib
import re
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import ZConfig

from zodbshootout.config.keys import install_key_recording
from zodbshootout.errors import UsageError
from zodbshootout.inputs import MAX_CONFIG_BYTES, read_text

DATA_DIR_VARIABLE = "ZODBSHOOTOUT_DATA"

#: How deep sections may nest.  Real configurations need 4 (a DemoStorage
#: over a base inside <zodb>); ZODB names a nested DemoStorage after the repr
#: of its base's name, which doubles at every level: 40 levels took 15 GB.
MAX_SECTION_DEPTH = 12

_SCHEMA_TEXT = """\
<schema>
  <import package="ZODB"/>
  <import package="zodbshootout"/>
  <import package="relstorage"/>
  <multisection type="ZODB.database" name="+" attribute="databases" required="yes">
    <description>The databases to measure; the section names are the table's columns.</description>
  </multisection>
</schema>
"""

_schema = None


class ConfigError(Exception):
    """The configuration cannot be used; the message names the file and line."""


@dataclass(frozen=True)
class ConfigSource:
    """Everything a process needs to parse the configuration again by itself."""

    text: str
    url: str
    data_dir: str

    @property
    def path(self) -> str:
        return self.url.removeprefix("file://")


@dataclass(frozen=True)
class LoadedConfig:
    """A parsed configuration: database factories by name, in file order."""

    source: ConfigSource
    databases: dict[str, Any]  # name -> ZODB.config.ZODBDatabase

    @property
    def names(self) -> list[str]:
        return list(self.databases)


def _get_schema() -> Any:
    global _schema
    if _schema is None:
        _schema = ZConfig.loadSchemaFile(io.StringIO(_SCHEMA_TEXT))
    return _schema


def read_source(path: str, data_dir: str) -> ConfigSource:
    """Read the configuration file; a missing or unreadable file is a ConfigError."""
    file = pathlib.Path(path)
    try:
        text = read_text(path, "the configuration", MAX_CONFIG_BYTES)
    except UsageError as e:
        raise ConfigError(str(e)) from None
    return ConfigSource(text=text, url=file.resolve().as_uri(), data_dir=data_dir)


def load_config(path: str, data_dir: str | None = None) -> LoadedConfig:
    """Load the file at *path*; errors are ConfigError naming the file and line."""
    if data_dir is None:
        data_dir = os.environ.get(DATA_DIR_VARIABLE, "")
    return parse_source(read_source(path, data_dir))


def parse_source(source: ConfigSource) -> LoadedConfig:
    """Parse *source* in this process.

    ``$(ZODBSHOOTOUT_DATA)`` is substituted from ``source.data_dir`` so that
    every process sees the same paths.
    """
    if source.data_dir:
        os.environ[DATA_DIR_VARIABLE] = source.data_dir
    check_includes(source.text, source.url)
    check_nesting(source.text, source.url)
    # So that caches are sized only where the text left them alone (cache_sizing).
    install_key_recording()
    try:
        root, _handler = ZConfig.loadConfigFile(
            _get_schema(), io.StringIO(source.text), url=source.url
        )
    except ZConfig.ConfigurationError as e:
        raise ConfigError(_describe(e, source)) from None
    except (UnicodeDecodeError, RecursionError) as e:
        # What check_includes could not see (an include named through a %define).
        reason = "is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else "nests too deeply"
        raise ConfigError(f"{source.path}: an included file {reason}") from None
    databases: dict[str, Any] = {}
    for factory in root.databases:
        databases[factory.name] = factory
    return LoadedConfig(source=source, databases=databases)


_INCLUDE = re.compile(r"^[ \t]*%include[ \t]+(\S+)", re.IGNORECASE | re.MULTILINE)


def check_includes(text: str, url: str, chain: tuple[str, ...] = ()) -> None:
    """A ConfigError naming file and line for an ``%include`` loop or a binary include.

    ZConfig itself would recurse until Python gives up, or fail to decode.
    Includes whose name holds a ``$`` substitution are left to ZConfig.
    """
    chain = (*chain, url)
    for match in _INCLUDE.finditer(text):
        target = match.group(1)
        if "$" in target:
            continue
        included = urllib.parse.urljoin(url, target)
        if not included.startswith("file://"):
            continue
        where = f"{_path(url)}:{text.count(chr(10), 0, match.start()) + 1}"
        if included in chain:
            loop = [*chain[chain.index(included) :], included]
            raise ConfigError(f"{where}: %include loop: {' includes '.join(map(_path, loop))}")
        if not os.path.exists(_path(included)):
            continue  # missing: ZConfig says so, with the line
        try:
            included_text = read_text(_path(included), "the included file", MAX_CONFIG_BYTES)
        except UsageError as e:
            raise ConfigError(f"{where}: {e}") from None
        check_includes(included_text, included, chain)


_SECTION_TAG = re.compile(r"^[ \t]*<(/?)[^<>]*?(/?)>[ \t]*$", re.MULTILINE)


def check_nesting(text: str, url: str) -> None:
    """A ConfigError naming the line where sections nest deeper than MAX_SECTION_DEPTH."""
    depth = 0
    for tag in _SECTION_TAG.finditer(text):
        closing, empty = tag.group(1), tag.group(2)
        if closing:
            depth -= 1
        elif not empty:
            depth += 1
        if depth > MAX_SECTION_DEPTH:
            line = text.count("\n", 0, tag.start()) + 1
            raise ConfigError(
                f"{_path(url)}:{line}: sections nested more than {MAX_SECTION_DEPTH} deep"
            )


def _path(url: str) -> str:
    return urllib.parse.unquote(url.removeprefix("file://"))


def _describe(error: ZConfig.ConfigurationError, source: ConfigSource) -> str:
    """One line: ``FILE:LINE: message``, as compilers print it."""
    message = getattr(error, "message", None) or str(error)
    lineno = getattr(error, "lineno", None)
    url = getattr(error, "url", None) or source.url
    path = url.removeprefix("file://")
    message = " ".join(message.split())
    # ZConfig repeats the location inside some messages; keep one.
    for noise in (f" (line {lineno})", f" at line {lineno}", f", line {lineno}"):
        message = message.replace(noise, "")
    if isinstance(error, ZConfig.SubstitutionReplacementError) and not lineno:
        message = f"{message} (set it in the environment or %define it)"
    if "'zodb.database'; 0 found" in message:
        message = "no database to measure: add a <zodb NAME> section for each one"
    where = f"{path}:{lineno}" if lineno else path
    return f"{where}: {message}"


@contextlib.contextmanager
def data_directory() -> Iterator[str]:
    """Where embedded databases live: $ZODBSHOOTOUT_DATA, or a temporary directory."""
    chosen = os.environ.get(DATA_DIR_VARIABLE)
    if chosen:
        os.makedirs(chosen, exist_ok=True)
        yield os.path.abspath(chosen)
        return
    temporary = tempfile.mkdtemp(prefix="zodbshootout-")
    try:
        yield temporary
    finally:
        shutil.rmtree(temporary, ignore_errors=True)
