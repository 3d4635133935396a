"""Diagnostics a user can turn on: storage logging (``--log``) and leak counts (``--leaks``).

``--log LEVEL`` sends every logger's records of at least LEVEL to stderr;
``--log FILE.conf`` reads ZConfig logging sections (``<eventlog>`` for the
root logger, ``<logger>`` for named ones such as ``relstorage`` or ``ZEO``)
from FILE.conf.  The parent and every worker configure the same setup, and
passwords from the database configuration are masked in every handler.

``--leaks`` counts the objects Python's garbage collector tracks, by type,
before and after each timed phase (outside the timed region) in each worker;
:func:`zodbshootout.render.notes.leak_notes` summarises the growth.
"""

from __future__ import annotations

import gc
import io
import logging
import os
import pathlib
import sys
import threading
from collections import Counter
from collections.abc import Iterable
from typing import Any

from zodbshootout.errors import UsageError
from zodbshootout.inputs import MAX_CONFIG_BYTES, read_text
from zodbshootout.options.run import LogSetup
from zodbshootout.probes.base import Probe
from zodbshootout.probes.base import Step as StepView
from zodbshootout.redact import RedactingFilter, install_log_redaction

#: The key of the total in PhaseTiming.object_growth.
TOTAL = "*total*"  # render.notes.GROWTH_TOTAL reads it

#: How many types with the largest growth a worker reports per phase.
TOP_TYPES = 10

_LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")

_LOGGING_SCHEMA_TEXT = """\
<schema>
  <import package="ZConfig.components.logger"/>
  <section type="eventlog" name="*" attribute="eventlog"/>
  <multisection type="logger" name="*" attribute="loggers"/>
</schema>
"""

_LOG_FORMAT = "%(asctime)s %(processName)s %(name)s %(levelname)s: %(message)s"


def parse_log_option(value: str) -> LogSetup:
    """A LogSetup from ``--log LEVEL`` or ``--log FILE.conf``; UsageError if neither.

    The file is parsed here, once, so that a mistake in it is a one-line
    usage error before anything runs rather than a failure in every worker.
    """
    if value.upper() in _LEVELS:
        return LogSetup(level=value.upper())
    if not os.path.lexists(value):
        raise UsageError(
            f"--log {value}: not a level ({', '.join(_LEVELS)}) "
            "nor a readable ZConfig logging file: No such file or directory"
        )
    try:
        text = read_text(value, "the file", MAX_CONFIG_BYTES)
    except UsageError as e:
        raise UsageError(f"--log {value}: {e}") from None
    setup = LogSetup(config_text=text, config_url=value)
    _load_logging_config(setup)
    return setup


def _load_logging_config(setup: LogSetup) -> tuple[object, list[object]]:
    import ZConfig

    from zodbshootout.config.loader import ConfigError, load_checked

    schema = ZConfig.loadSchemaFile(io.StringIO(_LOGGING_SCHEMA_TEXT))
    # Its includes are read as the configuration's are: regular files, no loop.
    url = pathlib.Path(setup.config_url or "log.conf").resolve().as_uri()
    try:
        config, _handler = load_checked(schema, setup.config_text or "", url)
    except ConfigError as e:
        raise UsageError(f"--log {setup.config_url}: {e}") from None
    except ZConfig.ConfigurationError as e:
        message = " ".join(str(e).split())
        raise UsageError(f"--log {setup.config_url}: {message}") from None
    loggers = [config.eventlog] if config.eventlog is not None else []
    if not loggers and not config.loggers:
        raise UsageError(f"--log {setup.config_url}: no <eventlog> or <logger> section in the file")
    return config, [*loggers, *config.loggers]


_configured: LogSetup | None = None
_configuring = threading.Lock()  # worker threads (--threads) configure at the same time


def configure_logging(setup: LogSetup | None, secrets: Iterable[str] = ()) -> None:
    """Turn on logging as *setup* says, once per process; mask *secrets* everywhere.

    None leaves logging alone.  Calling again with the same setup does
    nothing, so each stage (and each worker thread) may call it.
    """
    if setup is None:
        return
    with _configuring:
        _configure_once(setup, frozenset(secrets))


def _configure_once(setup: LogSetup, secrets: frozenset[str]) -> None:
    global _configured
    if setup == _configured:
        return
    if setup.level is not None:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(_LOG_FORMAT))
        root = logging.getLogger()
        root.addHandler(handler)
        root.setLevel(setup.level)
        handlers = [handler]
    else:
        _config, factories = _load_logging_config(setup)
        handlers = []
        for factory in factories:
            logger = factory()  # type: ignore[operator]
            handlers.extend(logger.handlers)
    for handler in handlers:
        handler.addFilter(RedactingFilter(secrets))
    install_log_redaction(secrets)
    _configured = setup


def object_counts() -> Counter[str]:
    """How many objects of each type the garbage collector tracks now.

    Collects first, so that only objects something still refers to count.
    Containers and instances are tracked; atoms such as ``bytes`` and ``int``
    are not, so the counts show structures that grow, not payload bytes.
    """
    gc.collect()
    return Counter(_type_name(type(obj)) for obj in gc.get_objects())


def _type_name(kind: type) -> str:
    module = kind.__module__
    if module in ("builtins", None):
        return kind.__qualname__
    return f"{module}.{kind.__qualname__}"


def object_growth(before: Counter[str], after: Counter[str]) -> dict[str, int]:
    """The TOP_TYPES types that grew most from *before* to *after*, and the total.

    The total (under TOTAL) is the net change of all types, so it can be
    negative when a phase frees more than it keeps.
    """
    change = Counter(after)
    change.subtract(before)
    grown = {name: delta for name, delta in change.most_common(TOP_TYPES) if delta > 0}
    grown[TOTAL] = sum(after.values()) - sum(before.values())
    return grown


def log_current_traceback(logger: logging.Logger, what: str, secrets: Iterable[str]) -> None:
    """For --debug: log the exception being handled, passwords masked.

    Masked here, not by a handler's filter, because the handler that prints
    it (a test's, the user's --log) may have none.
    """
    if logger.isEnabledFor(logging.DEBUG):
        import traceback

        from zodbshootout.redact import redact

        logger.debug("%s:\n%s", what, redact(traceback.format_exc(), set(secrets)))


class Leaks(Probe):
    """``--leaks``: ``object_growth``, the gc-tracked objects a timed step left behind."""

    def __init__(self) -> None:
        self._before: Counter[str] | None = None

    def before(self, step: StepView) -> None:
        self._before = object_counts() if step.timed else None

    def after(self, step: StepView) -> dict[str, Any]:
        if self._before is None:
            return {"object_growth": None}
        return {"object_growth": object_growth(self._before, object_counts())}
