"""Read a ZConfig file that lists the databases to measure.

The file holds ``<zodb NAME>`` sections (ZODB's database section type); their
names are the table's columns, in file order.  The RelStorage component and
this tool's own component (``<embeddedzeo>``) are always available, so
``%import relstorage`` and ``%import zodbshootout`` are optional.  A text
that never names RelStorage is parsed without its component, so that the
processes measuring other storages don't import it.

Embedded storages keep their files below ``$(ZODBSHOOTOUT_DATA)``, an
environment variable that the tool points at a fresh temporary directory
unless the user has set it.

Workers do not receive parsed objects: they get a :class:`ConfigSource` (the
file's text, its URL and the data directory) and parse it again themselves.
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import pathlib
import re
import secrets
import shutil
import tempfile
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import ZConfig
import ZConfig.cfgparser
import ZConfig.loader

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
  %s
  <multisection type="ZODB.database" name="+" attribute="databases" required="yes">
    <description>The databases to measure; the section names are the table's columns.</description>
  </multisection>
</schema>
"""

#: Importing RelStorage's component imports RelStorage (a fifth of a second),
#: so a text that can't name one of its sections is parsed without it.
_MAY_NEED_RELSTORAGE = re.compile(r"relstorage|%include", re.IGNORECASE)


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


@functools.cache
def _get_schema(with_relstorage: bool) -> Any:
    relstorage = '<import package="relstorage"/>' if with_relstorage else ""
    return ZConfig.loadSchemaFile(io.StringIO(_SCHEMA_TEXT % relstorage))


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
    # So that caches are sized only where the text left them alone (cache_sizing).
    install_key_recording()
    try:
        root = _parse(source)
    except ZConfig.ConfigurationError as e:
        raise ConfigError(_describe(e, source)) from None
    databases: dict[str, Any] = {}
    for factory in root.databases:
        databases[factory.name] = factory
    return LoadedConfig(source=source, databases=databases)


def _parse(source: ConfigSource) -> Any:
    """The configuration's root section; ZConfig's errors as the whole schema words them."""
    if not _MAY_NEED_RELSTORAGE.search(source.text):
        try:
            return load_checked(_get_schema(False), source.text, source.url)[0]
        except ZConfig.ConfigurationError:
            pass  # told as the whole schema tells it (e.g. <postgresql> alone)
    return load_checked(_get_schema(True), source.text, source.url)[0]


def load_checked(schema: Any, text: str, url: str) -> tuple[Any, Any]:
    """``ZConfig.loadConfigFile`` of *text*, every file it includes read as an input.

    Each ``%include`` -- written out or named through a ``%define`` or an
    environment variable -- is read with the same regular-file-and-size check
    as the configuration itself, and an include loop is refused; each file
    is checked for sections nested too deeply.  Those refusals are a
    ConfigError naming the file and line of the ``%include``; what ZConfig
    itself finds wrong stays a ``ZConfig.ConfigurationError``.
    """
    check_nesting(text, url)
    loader = _CheckedLoader(schema)
    return loader.loadFile(io.StringIO(text), url)  # type: ignore[no-any-return]


class _CheckedLoader(ZConfig.loader.ConfigLoader):  # type: ignore[misc]
    """ZConfig's loader, reading included files only through inputs.read_text.

    ZConfig would open an include with urllib and read it whole: a FIFO
    blocks forever, /dev/zero fills the memory, and a file that includes
    itself recurses until Python gives up.
    """

    def __init__(self, schema: Any) -> None:
        super().__init__(schema)
        self._parsers: list[Any] = []  # the files being parsed, outermost first

    def _parse_resource(self, matcher: Any, resource: Any, defines: Any = None) -> None:
        parser = ZConfig.cfgparser.ZConfigParser(resource, self, defines)
        self._parsers.append(parser)
        try:
            parser.parse(matcher)
        finally:
            self._parsers.pop()

    def includeConfiguration(self, section: Any, url: str, defines: Any) -> None:
        url = self.normalizeURL(url)
        if not url.startswith("file://") or not self._parsers:
            super().includeConfiguration(section, url, defines)
            return
        including = self._parsers[-1]
        where = f"{_path(including.url)}:{including.lineno}"
        path = _path(url)
        chain = [_path(parser.url) for parser in self._parsers]
        real = [os.path.realpath(p) for p in chain]
        if os.path.realpath(path) in real:
            loop = [*chain[real.index(os.path.realpath(path)) :], path]
            raise ConfigError(f"{where}: %include loop: {' includes '.join(loop)}")
        try:
            text = read_text(path, "the included file", MAX_CONFIG_BYTES)
        except UsageError as e:
            raise ConfigError(f"{where}: {e}") from None
        check_nesting(text, url)
        with self.createResource(io.StringIO(text), url) as resource:
            self._parse_resource(section, resource, defines)


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
    # Named first, made inside the try: SIGTERM unwinds as an exception raised
    # wherever the run is, and one raised just after tempfile.mkdtemp() had made
    # the directory (before the try) left it behind.
    temporary = os.path.join(tempfile.gettempdir(), f"zodbshootout-{secrets.token_hex(8)}")
    ours = True
    try:
        try:
            os.mkdir(temporary, 0o700)
        except FileExistsError:
            ours = False  # somebody else's (64 random bits: not expected): left alone
            raise
        yield temporary
    finally:
        if ours:
            shutil.rmtree(temporary, ignore_errors=True)
            # parse_source() exported it for the workers; left set, the next run in
            # this process took the removed directory for one the user chose, made
            # it again and kept it.
            if os.environ.get(DATA_DIR_VARIABLE) == temporary:
                del os.environ[DATA_DIR_VARIABLE]
