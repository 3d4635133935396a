"""The ``<recording>`` section type: any storage section, recorded.

In an application's own configuration, after ``%import zodbshootout``::

    <zodb>
      <recording>
        path /var/trace/app
        max-size 200MB
        <zeoclient>
          server zeo.example.com:8100
        </zeoclient>
      </recording>
    </zodb>

Opening the section opens the inner storage and wraps it with
:func:`zodbshootout.recording.record`; each process that opens it writes its
own files (``PATH.PID.N.zodbtrace``).
"""

from __future__ import annotations

from typing import Any

from ZODB.config import BaseConfig


class RecordingSection(BaseConfig):
    """Factory of a :class:`~zodbshootout.recording.wrapper.RecordingStorage`."""

    def open(self) -> Any:
        from zodbshootout.recording.wrapper import record

        config = self.config
        storage = config.base.open()
        try:
            return record(
                storage,
                config.path,
                max_size=config.max_size,
                keep=config.keep,
                class_names=config.class_names,
                flush_interval=config.flush_interval,
            )
        except BaseException:
            storage.close()
            raise
