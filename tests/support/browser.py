"""Headless chromium for the tests of ``zodbshootout report`` pages.

Debian's chromium (``apt-get install chromium``; etc/provision.sh installs
it), run with its own profile and no network; a test skips with the reason
when it is not installed.
"""

from __future__ import annotations

import json
import pathlib
import re
import shutil
import subprocess
import time
from typing import Any

import pytest


def chromium() -> str:
    path = shutil.which("chromium") or shutil.which("chromium-browser")
    if path is None:
        pytest.skip("chromium is not installed (apt-get install chromium; etc/provision.sh does)")
    return path


def browse(
    tmp_path: pathlib.Path, page: pathlib.Path, *options: str
) -> subprocess.CompletedProcess:
    """Run headless chromium on *page* with *options*; its own profile, no network."""
    profile = tmp_path / f"profile-{time.monotonic_ns()}"
    command = [
        chromium(),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        *options,
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


def probe(
    tmp_path: pathlib.Path, page: pathlib.Path, script: str, width: int, *options: str
) -> Any:
    """The JSON that *script* (a ``<script>`` element) puts in ``<pre id="probe">`` of a
    copy of *page* (beside it, removed after), laid out *width* pixels wide."""
    copy = page.with_name(f"probe-{time.monotonic_ns()}.html")
    text = page.read_text(encoding="utf-8")
    copy.write_text(text.replace("</body>", script + "</body>"), encoding="utf-8")
    try:
        done = browse(
            tmp_path,
            copy,
            "--dump-dom",
            "--virtual-time-budget=5000",
            f"--window-size={width},900",
            *options,
        )
    finally:
        copy.unlink()
    found = re.search(r'<pre id="probe">(.*?)</pre>', done.stdout, re.S)
    assert found, done.stdout[-2000:]
    raw = found.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return json.loads(raw.replace("&amp;", "&"))
