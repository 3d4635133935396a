"""PostgreSQL's lock table: RelStorage takes one advisory lock per object it commits.

A private cluster with a small lock table (max_locks_per_transaction 10 ×
max_connections 20 = 200 slots) fails a commit of 1000 objects with "out of
shared memory", as the machine's server (64 × 100) does at 10000 objects
and two workers.  The run says so before measuring and in the footnote,
naming the setting and the value to set.
"""

from __future__ import annotations

import pytest

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.render.csv import format_csv
from zodbshootout.run.runner import Runner

pytestmark = [pytest.mark.postgresql, pytest.mark.slow]


def test_a_full_lock_table_is_foreseen_and_explained(write_config, data_dir):
    from support import privatepg

    reason = privatepg.unavailable()
    if reason:
        pytest.skip(reason)
    settings = {"max_locks_per_transaction": "10", "max_connections": "20"}
    cluster = privatepg.PrivateCluster("zs_locks", "Locks-Pw-4Kq", settings).start()
    try:
        path = write_config(f"""
            %import relstorage
            <zodb pg>
              <relstorage>
                <postgresql>
                  dsn {cluster.dsn()}
                </postgresql>
              </relstorage>
            </zodb>
        """)
        options = RunOptions(
            object_counts=(20, 1000), concurrencies=(1,), repetitions=1, phases=("add",)
        )
        result = Runner(load_config(path, data_dir), options).run()
    finally:
        cluster.stop()
    # Before measuring: a note with the setting and the value that fits the run.
    assert any(
        "max_locks_per_transaction 10 × (max_connections 20" in note
        and "set max_locks_per_transaction = 64" in note
        for note in result.notes
    ), result.notes
    lines = format_csv(result)
    assert lines[1].split()[-1].isdigit()  # 20 objects fit
    footnote = next(line for line in lines if line.startswith("[1]"))
    assert "PostgreSQL's lock table is full (out of shared memory" in footnote
    assert footnote.endswith("set max_locks_per_transaction = 64 and restart it")
