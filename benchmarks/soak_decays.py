"""A real decay made to happen, then found and attributed by ``zodbshootout mix`` (issue 30).

Not a test (tests/integration/test_mix_decays.py is): the run shown on
docs/soak.rst, "A real decay on the server", printed with the machine's load
so that it can be pasted there.  It starts a PostgreSQL cluster of its own
(tests/support/privatepg.py: root, the postgres user, the server binaries),
with autovacuum off, holds a snapshot open in another session (as pg_dump, a
long report or a session left idle in transaction does), and runs RelStorage
(history-free) under an update-only mix that restarts its client part-way.

Usage (from a checkout, as root, in the venv that has zodbshootout installed)::

    python benchmarks/soak_decays.py             # 40 s, restart at 28 s
    python benchmarks/soak_decays.py -d 60 --restart-clients 40

Prints the command, ``uptime`` before and after, and the run's output.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from support import privatepg  # noqa: E402  (the tests' private cluster)

#: What every transaction does: update all 100 objects of 1,900 bytes.
WORKLOAD = (
    "--mix", "update=100", "--keys", "uniform", "-n", "100", "-k", "100", "-s", "1900",
    "-c", "1", "--warmup", "0", "--seed", "1",
)  # fmt: skip


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-d", "--duration", default="40")
    parser.add_argument("--restart-clients", default="28")
    args = parser.parse_args(argv)
    reason = privatepg.unavailable()
    if reason:
        print(f"soak_decays: {reason}", file=sys.stderr)
        return 2
    import psycopg2

    cluster = privatepg.PrivateCluster("zs_decay", "Decay-Pw-4Tq", {"autovacuum": "off"})
    cluster.start()
    try:
        holder = psycopg2.connect(cluster.dsn())
        holder.set_session(isolation_level="REPEATABLE READ")
        with holder.cursor() as cursor:
            cursor.execute("SELECT txid_current()")
        with tempfile.TemporaryDirectory(prefix="zs-decay-") as directory:
            config = pathlib.Path(directory) / "pg.conf"
            config.write_text(
                "%import relstorage\n<zodb pg>\n  <relstorage>\n    keep-history false\n"
                f"    <postgresql>\n      dsn {cluster.dsn()}\n    </postgresql>\n"
                "  </relstorage>\n</zodb>\n"
            )
            command = [
                "mix", str(config), *WORKLOAD, "-d", args.duration,
                "--restart-clients", args.restart_clients, "-q",
            ]  # fmt: skip
            print("$ zodbshootout " + " ".join(["mix", "pg.conf", *command[2:]]))
            print("before:", _uptime())
            done = subprocess.run(
                [sys.executable, "-m", "zodbshootout", *command],
                capture_output=True,
                text=True,
                env={**os.environ, "TMPDIR": directory},
            )
            print("after: ", _uptime())
            print(done.stdout.replace(cluster.password, "***"))
            if done.returncode:
                print(done.stderr.replace(cluster.password, "***"), file=sys.stderr)
        holder.close()
        return done.returncode
    finally:
        cluster.stop()


if __name__ == "__main__":
    sys.exit(main())
