"""The ``<embeddedzeo>`` section type: a ZEO client of a server the tool runs.

The section wraps the storage the server should serve.  The process that
parses it does not start anything by itself: the runner starts the server
(:mod:`zodbshootout.storages.zeo.server`) and tells every process its address with
:func:`set_address` before the database is opened.
"""

from __future__ import annotations

import os
from typing import Any

from ZODB.config import BaseConfig

from zodbshootout.config.loader import DATA_DIR_VARIABLE
from zodbshootout.errors import CellError


class EmbeddedZEO(BaseConfig):
    """Factory for a ``ZEO.ClientStorage.ClientStorage`` of a tool-run server."""

    address: tuple[str, int] | None = None

    def set_address(self, address: tuple[str, int]) -> None:
        self.address = (address[0], int(address[1]))

    def open(self) -> Any:
        from ZEO.ClientStorage import ClientStorage

        if self.address is None:
            raise CellError("the embedded ZEO server for this database was not started")
        config = self.config
        var = config.var or os.environ.get(DATA_DIR_VARIABLE) or None
        return ClientStorage(
            self.address,
            cache_size=config.cache_size,
            client=config.client,
            var=var,
            blob_dir=config.blob_dir,
            shared_blob_dir=config.shared_blob_dir,
            wait_timeout=config.wait_timeout,
            name=self.name or "",
        )
