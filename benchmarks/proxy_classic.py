"""Does the delaying proxy at no delay change a classic run's numbers?  ZEO, direct and proxied.

Not a test: a measurement to run by hand and paste into a report.  Two ZEO
servers serve a FileStorage each (as etc/local.conf's zeo_fs does, through
``runzeo`` here), the second behind zodbshootout's proxy at no added delay;
a configuration written by hand names the first directly and the second
through the proxy (what ``--rtt 0`` will write itself).  Each round is one
run of both databases (the runner interleaves their repetitions; which
comes first alternates by round) and
gives per phase the ratio proxied ÷ direct of the mean rates; the median
and range over the rounds are printed with the load average.  The issue's
bar: at least 0.9.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/proxy_classic.py                        # 3 rounds of -n 1000 -c 2 -r 3
    python benchmarks/proxy_classic.py --rounds 5 -- -n 2000 -c 1 -r 5
"""

from __future__ import annotations

import argparse
import contextlib
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from zodbshootout.network.process import ProxyProcess
from zodbshootout.results import file as resultfile
from zodbshootout.results.stats import cell_stats


@contextlib.contextmanager
def zeo_server(path: Path) -> Iterator[int]:
    """A runzeo process serving a FileStorage at *path*; yields its port."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [sys.executable, "-m", "ZEO.runzeo", "-a", f"127.0.0.1:{port}", "-f", str(path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait()


def _config(direct: int, proxied: tuple[str, int], proxied_first: bool) -> str:
    """Both databases; the order alternates by round (the runner measures in file order)."""

    def section(name: str, address: str) -> str:
        return f"<zodb {name}>\n  <zeoclient>\n    server {address}\n  </zeoclient>\n</zodb>\n"

    host, port = proxied
    sections = [section("direct", f"127.0.0.1:{direct}"), section("proxied", f"{host}:{port}")]
    return "".join(reversed(sections) if proxied_first else sections)


def _ratios(config: Path, extra: list[str], out: Path) -> dict[str, float]:
    argv = [sys.executable, "-m", "zodbshootout", str(config), *extra, "-q", "-o", str(out)]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(argv)} failed:\n{done.stderr}")
    result = resultfile.load(str(out))
    rates: dict[tuple, float] = {}
    for key in result.cell_keys():
        stats = cell_stats(result, key)
        if stats is not None:
            rates[(key.database, key.concurrency, key.phase)] = stats.mean
    return {
        f"c={c} {phase}": rates[("proxied", c, phase)] / rate
        for (database, c, phase), rate in rates.items()
        if database == "direct" and ("proxied", c, phase) in rates
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:] if argv is None else argv
    ours, extra = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    args = parser.parse_args(ours)
    extra = extra or ["-n", "1000", "-c", "2", "-r", "3"]
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="proxy-classic-") as scratch:
        work = Path(scratch)
        with contextlib.ExitStack() as stack:
            direct = stack.enter_context(zeo_server(work / "direct.fs"))
            behind = stack.enter_context(zeo_server(work / "proxied.fs"))
            proxy = stack.enter_context(ProxyProcess([("127.0.0.1", behind)]))
            config = work / "zeo.conf"
            for number in range(args.rounds):
                config.write_text(_config(direct, proxy.listening[0], number % 2 == 1))
                before = os.getloadavg()[0]
                for cell, ratio in _ratios(config, extra, work / f"{number}.json").items():
                    ratios.setdefault(cell, []).append(ratio)
                after = os.getloadavg()[0]
                print(f"round {number + 1}: load {before:.1f} -> {after:.1f}", flush=True)
    print(f"\nproxied at 0 ms / direct, ZEO, mean rates, {args.rounds} rounds ({' '.join(extra)}):")
    for cell, values in ratios.items():
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"{cell:16} median {statistics.median(values):5.2f}   range {spread}")
    overall = statistics.median(statistics.median(v) for v in ratios.values())
    print(f"median of the phases' medians: {overall:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
