"""Does the delaying proxy at no delay change a classic run's numbers?  ZEO, direct and proxied.

Not a test: a measurement to run by hand and paste into a report.  Three
ZEO servers serve a FileStorage each (as etc/local.conf's zeo_fs does,
through ``runzeo`` here), the second behind zodbshootout's proxy at no
added delay; a configuration written by hand names the first and the third
directly and the second through the proxy (what ``--rtt 0`` will write
itself).  The third, ``control``, is the same as the first: its ratio to
it is the machine's noise, which the proxy's ratio has to be read against
(on a busy 2-core machine, phases that never touch the network, hot and
steamin, drift by ±25 % between two identical databases).  Each round is
one run of the three databases (the runner interleaves their repetitions;
their order rotates by round) and gives per phase the ratios proxied ÷
direct and control ÷ direct of the mean rates; the median and range over
the rounds are printed, with the load average and the CPU time the proxy
spent.  The issue's bar: at least 0.9.

Usage (from a checkout, in the venv that has zodbshootout installed)::

    python benchmarks/proxy_classic.py                        # 3 rounds of -n 1000 -c 2 -r 3
    python benchmarks/proxy_classic.py --rounds 5 -- -n 2000 -c 1 -r 5
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
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


def _config(servers: dict[str, tuple[str, int]], first: int) -> str:
    """The databases, in an order rotated by *first* (the runner measures in file order)."""

    def section(name: str, address: tuple[str, int]) -> str:
        host, port = address
        return f"<zodb {name}>\n  <zeoclient>\n    server {host}:{port}\n  </zeoclient>\n</zodb>\n"

    sections = [section(name, address) for name, address in servers.items()]
    first %= len(sections)
    return "".join(sections[first:] + sections[:first])


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
        f"{other} c={c} {phase}": rates[(other, c, phase)] / rate
        for (database, c, phase), rate in rates.items()
        if database == "direct"
        for other in ("proxied", "control")
        if (other, c, phase) in rates
    }


def _cpu_seconds(pid: int) -> float:
    """CPU time process *pid* has run so far, its ended threads included (Linux), in seconds."""
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    argv = sys.argv[1:] if argv is None else argv
    ours, extra = (
        (argv[: argv.index("--")], argv[argv.index("--") + 1 :]) if "--" in argv else (argv, [])
    )
    args = parser.parse_args(ours)
    # SIGTERM unwinds like Ctrl-C, so that the servers this script started stop with it.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    extra = extra or ["-n", "1000", "-c", "2", "-r", "3"]
    ratios: dict[str, list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="proxy-classic-") as scratch:
        work = Path(scratch)
        with contextlib.ExitStack() as stack:
            direct = stack.enter_context(zeo_server(work / "direct.fs"))
            behind = stack.enter_context(zeo_server(work / "proxied.fs"))
            control = stack.enter_context(zeo_server(work / "control.fs"))
            proxy = stack.enter_context(ProxyProcess([("127.0.0.1", behind)]))
            servers = {
                "direct": ("127.0.0.1", direct),
                "proxied": proxy.listening[0],
                "control": ("127.0.0.1", control),
            }
            config = work / "zeo.conf"
            for number in range(args.rounds):
                config.write_text(_config(servers, number))
                before, cpu = os.getloadavg()[0], _cpu_seconds(proxy.pid)
                for cell, ratio in _ratios(config, extra, work / f"{number}.json").items():
                    ratios.setdefault(cell, []).append(ratio)
                after, cpu = os.getloadavg()[0], _cpu_seconds(proxy.pid) - cpu
                print(
                    f"round {number + 1}: load {before:.1f} -> {after:.1f}, "
                    f"the proxy's CPU {cpu:.2f} s",
                    flush=True,
                )
    print(f"\nat 0 ms / direct, ZEO, mean rates, {args.rounds} rounds ({' '.join(extra)}):")
    for cell, values in sorted(ratios.items(), key=lambda item: item[0].split()[::-1]):
        spread = f"{min(values):.2f}-{max(values):.2f}"
        print(f"{cell:24} median {statistics.median(values):5.2f}   range {spread}")
    for other in ("proxied", "control"):
        mine = [statistics.median(v) for cell, v in ratios.items() if cell.startswith(other)]
        print(f"{other}: median of the phases' medians {statistics.median(mine):.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
