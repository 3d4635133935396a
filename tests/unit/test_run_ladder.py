"""``--rtt`` in a run, before anything starts: the rows, and every refusal in one line.

No process is started here: a ladder's rows are planned from the
configuration alone, and each refusal comes before a server or a proxy would.
"""

from __future__ import annotations

import pytest

from zodbshootout.config.hosts import HostSpec
from zodbshootout.config.loader import load_config
from zodbshootout.errors import UsageError
from zodbshootout.network.delays import RttStep, parse_rtt_ladder
from zodbshootout.run.ladder import Ladder

from support.inprocess import assert_one_line_error, run_main

LOCAL = """
    %import zodbshootout
    %import relstorage
    <zodb zeo>
      <embeddedzeo>
        <filestorage>
          path $(ZODBSHOOTOUT_DATA)/zeo.fs
        </filestorage>
      </embeddedzeo>
    </zodb>
    <zodb sqlite>
      <relstorage>
        <sqlite3>
          data-dir $(ZODBSHOOTOUT_DATA)/sqlite
        </sqlite3>
      </relstorage>
    </zodb>
    <zodb pg>
      <relstorage>
        <postgresql>
          dsn dbname=x host=127.0.0.1 port=5432
        </postgresql>
      </relstorage>
    </zodb>
"""

NO_SERVER = """
    <zodb fs>
      <filestorage>
        path $(ZODBSHOOTOUT_DATA)/fs.fs
      </filestorage>
    </zodb>
"""


def test_each_database_with_a_server_is_a_row_per_step(write_config, data_dir):
    config = load_config(write_config(LOCAL), data_dir)
    ladder = Ladder(config, config.names, parse_rtt_ladder("0,0.5,2ms±0.5"))
    assert ladder.names == [
        *("zeo@0ms", "zeo@0.5ms", "zeo@2ms±0.5", "sqlite"),
        *("pg@0ms", "pg@0.5ms", "pg@2ms±0.5"),
    ]
    assert ladder.database_of("pg@0.5ms") == "pg"
    assert ladder.database_of("sqlite") == "sqlite"
    assert ladder.record["unproxied"] == ["sqlite"]
    assert ladder.record["ladder"][2] == {"rtt_seconds": 2e-3, "jitter_seconds": 0.5e-3}


def test_without_steps_every_database_is_its_own_row(write_config, data_dir):
    config = load_config(write_config(LOCAL), data_dir)
    ladder = Ladder(config, config.names)
    assert ladder.names == config.names
    assert ladder.record == {}


def test_a_configuration_without_a_server_has_nothing_to_delay(write_config, data_dir):
    config = load_config(write_config(NO_SERVER), data_dir)
    with pytest.raises(UsageError, match="nothing to delay"):
        Ladder(config, config.names, (RttStep(0.002),))


def test_the_proxies_run_on_every_worker_host_once_when_one_is_another_machine(
    write_config, data_dir
):
    config = load_config(write_config(LOCAL), data_dir)
    step = (RttStep(0.002),)
    hosts = (HostSpec("a"), HostSpec("localhost"), HostSpec("a", share=2), HostSpec("b"))
    ladder = Ladder(config, config.names, step, hosts)
    # This machine too: its workers connect to its own loopback.
    assert [host.name for host in ladder.hosts] == ["a", "localhost", "b"]
    assert ladder.record["proxy_hosts"] == ["a", "localhost", "b"]
    assert ladder.record["proxy_host"] == "a"
    # Only this machine: its own proxies, measured here (no host's probe).
    local = Ladder(config, config.names, step, (HostSpec("localhost"),))
    assert local.hosts == ()
    assert local.record["proxy_host"] is None


@pytest.mark.parametrize("command", [(), ("mix",)])
def test_a_ladder_with_nothing_to_delay_is_refused_in_one_line(command, write_config, data_dir):
    config = write_config(NO_SERVER)
    code, stdout, stderr = run_main(*command, config, "--rtt", "0,2ms")
    if command:  # mix's errors name the subcommand
        stderr = stderr.replace("zodbshootout mix: error:", "zodbshootout: error:")
    assert_one_line_error(code, stdout, stderr)
    assert "--rtt: the ladder has nothing to delay" in stderr


@pytest.mark.parametrize("command", [(), ("mix",)])
@pytest.mark.parametrize(
    ("ladder", "why"),
    [
        ("-1ms", "can't be negative"),
        ("0,-2", "can't be negative"),
        ("11s", "at most 10 s"),
        ("fast", "not a round-trip time"),
        ("2ms±3", "jitter can't exceed"),
        ("2,2ms", "asked twice"),
    ],
)
def test_bad_delays_are_refused_in_one_line(command, ladder, why, write_config, data_dir):
    config = write_config(LOCAL)
    code, stdout, stderr = run_main(*command, config, "--rtt", ladder)
    if command:
        stderr = stderr.replace("zodbshootout mix: error:", "zodbshootout: error:")
    assert_one_line_error(code, stdout, stderr)
    assert "argument --rtt: " in stderr
    assert why in stderr
