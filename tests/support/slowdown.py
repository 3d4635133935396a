"""A tiny package that makes every storage load take four times as long: a known slowdown.

Installed into a variant's environment like any requirement
(``zodbshootout-test-slowdown @ file:///.../the.whl``), it slows that
variant alone.  The wheel is written here, file by file (a wheel is a zip
with its metadata and a RECORD of hashes), so no build tool or network is
needed.  Its ``.pth`` file (site-packages runs a line that starts with
``import``) registers an import hook; when ZODB's ``mvccadapter`` module is
imported, the hook wraps ``MVCCAdapterInstance.load`` — every object a
connection reads from a non-MVCC storage (FileStorage, ZEO) goes through
it — so that each call spins three times as long again as it took (a sleep
would add the system's wake-up latency, tens of microseconds, to a load of
a few from a FileStorage): four times as long.  A cold read also unpickles
and builds each object, so the whole phase slows about twofold: far above
what a busy machine's spread can hide (a bare doubling of the load showed
as 1.36x at ±32 %, too close to a 30 % gate).  The test measures a
FileStorage read in one thread, where nothing else waits for the CPU this
holds (over ZEO, the spin would also starve the client's I/O thread).
RelStorage connections don't use that adapter: their cells stay as fast.

Built the same way, :data:`NO_PREFETCH` makes ``Connection.prefetch`` do
nothing: a variant whose work per transaction grows (a round trip per
object where one batch did), for the work-count gate.
"""

from __future__ import annotations

import base64
import hashlib
import pathlib
import zipfile
from dataclasses import dataclass

# A .pth line runs this module at start-up: it patches TARGET as soon as it is imported.
HOOK = '''\
"""{summary} (zodbshootout's tests)."""
import importlib.abc
import importlib.util
import sys
import time

TARGET = "{target}"

{patch}

class _Hook(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != TARGET:
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec(name)
        execute = spec.loader.exec_module

        def exec_module(module):
            execute(module)
            _patch(module)

        spec.loader.exec_module = exec_module
        return spec


if TARGET not in sys.modules:
    sys.meta_path.insert(0, _Hook())
'''


@dataclass(frozen=True)
class Package:
    """A one-module package that patches one ZODB module when it is imported."""

    name: str
    summary: str
    target: str
    patch: str  # the source of ``_patch(module)``
    version: str = "1.0"

    @property
    def distribution(self) -> str:
        return self.name.replace("_", "-")

    @property
    def code(self) -> str:
        return HOOK.format(summary=self.summary, target=self.target, patch=self.patch)


SLOWDOWN = Package(
    "zodbshootout_test_slowdown",
    "Every MVCCAdapterInstance.load takes four times as long",
    "ZODB.mvccadapter",
    """\
def _patch(module):
    adapter = module.MVCCAdapterInstance
    load = adapter.load

    def load_four_times_as_long(self, oid):
        start = time.perf_counter()
        try:
            return load(self, oid)
        finally:
            until = time.perf_counter() + 3 * (time.perf_counter() - start)
            while time.perf_counter() < until:
                pass

    adapter.load = load_four_times_as_long
""",
)

#: An application that never prefetches: Connection.prefetch does nothing.
NO_PREFETCH = Package(
    "zodbshootout_test_no_prefetch",
    "Connection.prefetch does nothing",
    "ZODB.Connection",
    """\
def _patch(module):
    module.Connection.prefetch = lambda self, *args: None
""",
)

# The slowdown's names, as the tests that use it read them.
NAME, DISTRIBUTION, VERSION = SLOWDOWN.name, SLOWDOWN.distribution, SLOWDOWN.version


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def build_wheel(directory: pathlib.Path, package: Package = SLOWDOWN) -> pathlib.Path:
    """Write *package*'s wheel into *directory*; its path."""
    name, version = package.name, package.version
    info = f"{name}-{version}.dist-info"
    files = {
        f"{name}.py": package.code.encode(),
        f"{name}.pth": f"import {name}\n".encode(),
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {package.distribution}\nVersion: {version}\n"
            f"Summary: zodbshootout's tests: {package.summary}\n"
        ).encode(),
        f"{info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: zodbshootout-tests\n"
            b"Root-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    record = [_record_line(path, data) for path, data in files.items()]
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel
