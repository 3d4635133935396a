"""--rtt's routes: each storage kind's servers, and the configuration rewritten through proxies.

The rewritten text is checked by parsing it again with ZConfig and reading
the addresses as the libraries themselves would: ZEO's parsed server
addresses, libpq's own DSN parser (psycopg2.extensions.parse_dsn), the
MySQL section's keys, RelStorage's cache-servers option.
"""

from __future__ import annotations

import pytest

from zodbshootout import storages
from zodbshootout.config.loader import load_config, parse_source
from zodbshootout.errors import CellError, UsageError
from zodbshootout.network.delayed import DelayedDatabase, plan_ladder
from zodbshootout.network.routes import apply_edits, find_servers, rewrite
from zodbshootout.storages.network import LineEdit
from zodbshootout.storages.relstorage.network import parse_conninfo

from conftest import ETC

PROXY = ("127.0.0.1", 40001)


def _routes(servers, first_port=40001):
    return {target: ("127.0.0.1", first_port + i) for i, target in enumerate(servers.targets)}


def _adapter_config(config, name):
    """The parsed <postgresql>/<mysql> section of database *name*."""
    factories = list(storages.storage_factories(config.databases[name]))
    return factories[-1].config


def test_sample_conf_reaches_each_server_and_is_rewritten_through_its_proxy(monkeypatch, data_dir):
    monkeypatch.delenv("PGHOST", raising=False)
    config = load_config(str(ETC / "sample.conf"), data_dir)
    found = {name: find_servers(config, name) for name in config.names}
    assert found["postgresql"].targets == [("127.0.0.1", 5432)]
    assert found["mysql"].targets == [("127.0.0.1", 3306)]
    assert found["mysql_mc"].targets == [("127.0.0.1", 24004), ("127.0.0.1", 3306)]
    assert found["mysql_mc"].servers == ["memcached", "MySQL"]
    assert found["zeo_fs"].targets == [("127.0.0.1", 24003)]
    assert all(servers.refusal() is None for servers in found.values())

    psycopg2 = pytest.importorskip("psycopg2")
    for name, servers in found.items():
        routes = _routes(servers)
        proxied = rewrite(config.source, servers, routes)
        again = parse_source(proxied.source)
        # Every server is reached through its proxy, and nothing else changed.
        assert find_servers(again, name).targets == [routes[t] for t in servers.targets]
        assert proxied.embedded == []
        if name == "postgresql":
            dsn = psycopg2.extensions.parse_dsn(_adapter_config(again, name).dsn)
            assert (dsn["host"], dsn["port"]) == ("127.0.0.1", "40001")
            assert dsn["password"] == "zodbshootout"  # the $password reference kept
            assert dsn["dbname"] == "zodbshootout_pg"
        if name == "mysql":
            section = _adapter_config(again, name)
            assert (section.host, section.port, section.db) == (
                "127.0.0.1",
                40001,
                "zodbshootout_mysql",
            )
        if name == "mysql_mc":
            relstorage = next(iter(storages.storage_factories(again.databases[name])))
            assert relstorage.config.cache_servers == "127.0.0.1:40001"
        # The other databases' lines are as they were.
        assert len(proxied.source.text.splitlines()) >= len(config.source.text.splitlines())


def test_embedded_zeo_servers_are_proxied_by_address_not_by_text(data_dir):
    config = load_config(str(ETC / "local.conf"), data_dir)
    started = [("127.0.0.1", 35001)]  # as the runner's EmbeddedServers.addresses() gives them
    servers = find_servers(config, "zeo_pcache", started)
    assert servers.targets == started
    proxied = rewrite(config.source, servers, {started[0]: PROXY})
    assert proxied.embedded == [PROXY]
    assert proxied.source.text == config.source.text
    assert find_servers(config, "sqlite").links == ()


def test_a_configuration_without_servers_has_nothing_to_delay(write_config, data_dir):
    path = write_config(
        """
        <zodb files>
          <filestorage>
            path $(ZODBSHOOTOUT_DATA)/x.fs
          </filestorage>
        </zodb>
        <zodb sqlite>
          <relstorage>
            <sqlite3>
              data-dir $(ZODBSHOOTOUT_DATA)/sqlite
            </sqlite3>
          </relstorage>
        </zodb>
        """
    )
    config = load_config(path, data_dir)
    with pytest.raises(UsageError, match=r"^--rtt: the ladder has nothing to delay"):
        plan_ladder(config, config.names)
    # With the embedded default, ZEO is something to delay.
    local = load_config(str(ETC / "local.conf"), data_dir)
    assert set(plan_ladder(local, local.names)) == {"zeo_fs", "sqlite", "zeo_pcache"}


def test_a_delayed_database_without_servers_is_the_original_and_a_refused_one_says_why(
    write_config, data_dir, monkeypatch
):
    monkeypatch.delenv("PGHOST", raising=False)
    local = load_config(str(ETC / "local.conf"), data_dir)
    with DelayedDatabase(local, "sqlite") as delayed:  # no server: no proxy process
        assert delayed.proxied.source == local.source
        assert delayed.proxied.embedded == []
    with pytest.raises(ValueError, match="embedded ZEO servers' addresses are needed"):
        DelayedDatabase(local, "zeo_fs")
    section = "<relstorage>\n<postgresql>\ndsn dbname=x\n</postgresql>\n</relstorage>"
    config, _servers = _one(write_config, data_dir, section)
    with pytest.raises(CellError, match=r"^db: it reaches PostgreSQL through a Unix socket"):
        DelayedDatabase(config, "db")
    # Its only server can't be delayed: the ladder says why, in one line.
    with pytest.raises(UsageError, match=r"^--rtt: db: it reaches PostgreSQL through a Unix"):
        plan_ladder(config, config.names)


def _one(write_config, data_dir, section: str, name: str = "db"):
    text = f"%import relstorage\n%import ZEO\n<zodb {name}>\n{section}\n</zodb>\n"
    config = load_config(write_config(text), data_dir)
    return config, find_servers(config, name)


@pytest.mark.parametrize(
    ("section", "says"),
    [
        (
            "<relstorage>\n<postgresql>\ndsn dbname=x user=y\n</postgresql>\n</relstorage>",
            "through a Unix socket (no host in its dsn)",
        ),
        (
            "<relstorage>\n<postgresql>\ndsn dbname=x host=/var/run/postgresql\n"
            "</postgresql>\n</relstorage>",
            "through a Unix socket (/var/run/postgresql)",
        ),
        (
            "<relstorage>\n<postgresql>\ndsn postgresql://u@db.example/x\n</postgresql>\n"
            "</relstorage>",
            "its dsn is a URI",
        ),
        (
            "<relstorage>\n<postgresql>\ndsn host=a,b dbname=x\n</postgresql>\n</relstorage>",
            "several hosts",
        ),
        (
            "<relstorage>\n<mysql>\ndriver MySQLdb\nhost localhost\ndb x\n</mysql>\n</relstorage>",
            "its host is localhost, which MySQLdb reaches through its Unix socket",
        ),
        (
            "<relstorage>\n<mysql>\ndb x\n</mysql>\n</relstorage>",
            "write host 127.0.0.1",
        ),
        (
            "<relstorage>\n<mysql>\nhost 127.0.0.1\nunix_socket /run/mysqld.sock\n</mysql>\n"
            "</relstorage>",
            "through the Unix socket /run/mysqld.sock",
        ),
        (
            "<relstorage>\ncache-servers /run/memcached.sock\n<sqlite3>\ndata-dir /tmp/x\n"
            "</sqlite3>\n</relstorage>",
            "is not a TCP host:port",
        ),
        (
            "<relstorage>\nreplica-conf /etc/replicas\n<mysql>\nhost 10.0.0.1\n</mysql>\n"
            "</relstorage>",
            "its replica-conf file names servers",
        ),
        (
            "<clientstorage>\nserver /run/zeo.sock\n</clientstorage>",
            "the Unix socket /run/zeo.sock",
        ),
    ],
)
def test_servers_a_tcp_proxy_cannot_reach_are_refused_in_one_line(
    write_config, data_dir, monkeypatch, section, says
):
    monkeypatch.delenv("PGHOST", raising=False)
    monkeypatch.delenv("PGHOSTADDR", raising=False)
    _config, servers = _one(write_config, data_dir, section)
    refusal = servers.refusal()
    assert refusal is not None
    assert says in refusal
    assert refusal.startswith("db: ")
    assert "\n" not in refusal
    with pytest.raises(ValueError, match="can't measure this database"):
        rewrite(_config.source, servers, {})


def test_libpq_defaults_name_the_postgresql_server(write_config, data_dir, monkeypatch):
    monkeypatch.setenv("PGHOST", "db.example")
    monkeypatch.setenv("PGPORT", "6543")
    section = "<relstorage>\n<postgresql>\ndsn dbname=x\n</postgresql>\n</relstorage>"
    config, servers = _one(write_config, data_dir, section)
    assert servers.targets == [("db.example", 6543)]
    proxied = rewrite(config.source, servers, {("db.example", 6543): PROXY})
    dsn = parse_conninfo(_adapter_config(parse_source(proxied.source), "db").dsn)
    assert (dsn["host"], dsn["port"]) == (*PROXY[:1], "40001")


def test_pymysql_reaches_localhost_over_tcp_and_gets_a_port_line(write_config, data_dir):
    section = "<relstorage>\n<mysql>\ndriver PyMySQL\nhost localhost\ndb x\n</mysql>\n</relstorage>"
    config, servers = _one(write_config, data_dir, section)
    assert servers.targets == [("localhost", 3306)]
    proxied = rewrite(config.source, servers, {("localhost", 3306): PROXY})
    mysql = _adapter_config(parse_source(proxied.source), "db")
    assert (mysql.host, mysql.port, mysql.db) == ("127.0.0.1", 40001, "x")


def test_zeo_failover_lists_and_clientstorage_sections_are_rewritten_line_by_line(
    write_config, data_dir
):
    section = (
        "<clientstorage>\n  server 10.0.0.1:8100\n  server [::1]:8101\n  wait-timeout 5\n"
        "</clientstorage>"
    )
    config, servers = _one(write_config, data_dir, section)
    assert servers.targets == [("10.0.0.1", 8100), ("::1", 8101)]
    routes = _routes(servers)
    proxied = rewrite(config.source, servers, routes)
    factory = next(iter(storages.storage_factories(parse_source(proxied.source).databases["db"])))
    assert [s.address for s in factory.config.server] == [
        ("127.0.0.1", 40001),
        ("127.0.0.1", 40002),
    ]
    assert "  server 127.0.0.1:40001\n" in proxied.source.text  # the indentation kept


def test_a_server_named_in_an_included_file_is_refused(write_config, data_dir, tmp_path):
    included = tmp_path / "zeo.conf"
    included.write_text("<zodb db>\n<zeoclient>\nserver 10.0.0.1:8100\n</zeoclient>\n</zodb>\n")
    config = load_config(write_config(f"%include {included}\n"), data_dir)
    refusal = find_servers(config, "db").refusal()
    assert refusal is not None
    assert f"included file ({included}:3)" in refusal


@pytest.mark.parametrize(
    "dsn",
    [
        "dbname=x host=127.0.0.1 port=5432",
        "dbname = x  host='db one'   port= 5433",
        r"password='a \' b' host=h",
        "host=a host=b",
        "user=u password=p$w host=h application_name=zodbshootout",
    ],
)
def test_conninfo_reads_as_libpq_reads_it(dsn):
    psycopg2 = pytest.importorskip("psycopg2")
    assert parse_conninfo(dsn) == psycopg2.extensions.parse_dsn(dsn)


def test_edits_keep_indentation_line_endings_and_the_other_lines():
    text = "a\r\n  host x\r\nb\n  dsn k=v\nlast"
    edits = [
        LineEdit("u", 2, "host 127.0.0.1\nport 1"),
        LineEdit("u", 4, " port=2", append=True),
        LineEdit("u", 5, "final"),
    ]
    assert apply_edits(text, edits) == (
        "a\r\n  host 127.0.0.1\r\n  port 1\r\nb\n  dsn k=v port=2\nfinal"
    )
    with pytest.raises(ValueError, match="twice"):
        apply_edits(text, [LineEdit("u", 1, "x"), LineEdit("u", 1, "y")])
