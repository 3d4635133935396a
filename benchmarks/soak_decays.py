"""A real decay made to happen, then found and attributed by ``zodbshootout mix`` (issue 30).

Not a test (tests/integration/test_mix_decays.py is, with the same
parameters): the runs shown on docs/soak.rst, printed with the machine's load
so that they can be pasted there.

The server's (default): a PostgreSQL cluster of its own
(tests/support/privatepg.py: root, the postgres user, the server binaries),
with autovacuum off and 16 MB of shared buffers, a snapshot held open in
another session (as pg_dump, a long report or a session left idle in
transaction does), and RelStorage (history-free) under an update-only mix
that restarts its client part-way.

The client's (``--client``): RelStorage on SQLite, two workers each leaving
a connection idle in its pool (``--idle-connections 1``), four in five
transactions updating one object and one in five scanning 300 through a
pickle cache of 100 objects, restarted part-way.

Usage (from a checkout, as root for the server's, in the venv that has
zodbshootout installed)::

    python benchmarks/soak_decays.py             # 60 s, restart at 40 s
    python benchmarks/soak_decays.py --client

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

from integration.test_mix_decays import (  # noqa: E402  (the tests' parameters)
    CLIENT_DECAY_ARGS,
    CLIENT_DECAY_CONFIG,
    CLIENT_DECAY_ENVIRONMENT,
    SERVER_DECAY_ARGS,
    SERVER_DECAY_SETTINGS,
)

from support import privatepg  # noqa: E402  (the tests' private cluster)


def _uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--client", action="store_true", help="the client-side decay")
    args = parser.parse_args(argv)
    if args.client:
        return _client()
    reason = privatepg.unavailable()
    if reason:
        print(f"soak_decays: {reason}", file=sys.stderr)
        return 2
    import psycopg2

    cluster = privatepg.PrivateCluster("zs_decay", "Decay-Pw-4Tq", SERVER_DECAY_SETTINGS)
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
            done = _run(config, SERVER_DECAY_ARGS, {"TMPDIR": directory}, cluster.password)
        holder.close()
        return done
    finally:
        cluster.stop()


def _client() -> int:
    with tempfile.TemporaryDirectory(prefix="zs-decay-") as directory:
        config = pathlib.Path(directory) / "idle.conf"
        config.write_text(CLIENT_DECAY_CONFIG)
        environment = {"TMPDIR": directory, **CLIENT_DECAY_ENVIRONMENT}
        return _run(config, CLIENT_DECAY_ARGS, environment, None)


def _run(
    config: pathlib.Path, workload: tuple[str, ...], environment: dict[str, str], secret: str | None
) -> int:
    """Run the mix on *config*, print the command, the load and the output; its exit code."""
    command = ["mix", str(config), *workload, "-q"]
    shown = " ".join(f"{k}={v}" for k, v in environment.items() if k != "TMPDIR")
    print(f"$ {shown} zodbshootout mix {config.name} " + " ".join(command[2:]))
    print("before:", _uptime())
    done = subprocess.run(
        [sys.executable, "-m", "zodbshootout", *command],
        capture_output=True,
        text=True,
        env={**os.environ, **environment},
    )
    print("after: ", _uptime())
    print(done.stdout.replace(secret, "***") if secret else done.stdout)
    if done.returncode:
        print(done.stderr.replace(secret, "***") if secret else done.stderr, file=sys.stderr)
    return done.returncode


if __name__ == "__main__":
    sys.exit(main())
