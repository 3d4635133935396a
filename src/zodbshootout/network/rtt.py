"""The round trip a database's servers answer in, measured at their own protocol level.

The same probe as the database's description (zodbshootout.database.info):
the median of a few trivial requests after one untimed -- a ZEO ``ping``,
a ``SELECT 1`` on RelStorage's database, a ``version`` to each memcached
server -- on a database opened with the tool's own code, so through
whatever the configuration given reaches (the proxies of a rewritten one).
Outside any timed region.
"""

from __future__ import annotations

from collections.abc import Sequence

from zodbshootout.config.loader import ConfigSource
from zodbshootout.database.info import describe_database
from zodbshootout.database.open import open_database
from zodbshootout.errors import CellError
from zodbshootout.redact import find_secrets, redact

Address = tuple[str, int]


def measure_round_trips(
    source: ConfigSource, name: str, embedded: Sequence[Address] = ()
) -> dict[str, float]:
    """Seconds per round trip to each server of database *name*, by server.

    ``{"postgresql": s, "memcached": s}``: the database's server as its
    description names it, then its cache servers in the configuration's
    order (``memcached 1``, ``memcached 2`` when there are several).  A
    CellError, passwords masked, when the probe fails.
    """
    db = open_database(source, name, list(embedded), client_label="rtt")
    try:
        info = describe_database(db)
    finally:
        db.close()
    if "probe_error" in info or "latency_seconds" not in info:
        why = redact(str(info.get("probe_error", "no latency probe")), find_secrets(source.text))
        raise CellError(f"the round trip to {name}'s servers could not be measured: {why}")
    seen = {str(info.get("database", info["kind"])): float(info["latency_seconds"])}
    caches = list(info.get("cache_server_latency_seconds", {}).values())
    for number, seconds in enumerate(caches, 1):
        seen["memcached" if len(caches) == 1 else f"memcached {number}"] = float(seconds)
    return seen
