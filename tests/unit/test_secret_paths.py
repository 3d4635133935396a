"""Every path by which the runner reports a failure masks the configuration's passwords."""

from __future__ import annotations

import logging

from zodbshootout.config.loader import load_config
from zodbshootout.options.run import RunOptions
from zodbshootout.redact import MASK
from zodbshootout.run.runner import Runner

PASSWORD = "Pa55-in-a-path-8Jw"


def test_failures_and_progress_never_quote_the_password(write_config, tmp_path, caplog):
    # The password is also, by mistake, part of a FileStorage path that names
    # a directory: the open error quotes the path.
    (tmp_path / PASSWORD).mkdir()
    path = write_config(f"""
        %define PW {PASSWORD}
        <zodb decoy>
          <relstorage>
            <mysql>
              driver no_such_driver_module
              passwd $PW
            </mysql>
          </relstorage>
        </zodb>
        <zodb files>
          <filestorage>
            path {tmp_path}/$PW
          </filestorage>
        </zodb>
    """)
    events = []
    options = RunOptions(object_counts=(10,), concurrencies=(1,), repetitions=1)
    with caplog.at_level(logging.DEBUG, logger="zodbshootout"):
        result = Runner(load_config(path, str(tmp_path)), options, progress=events.append).run()

    reasons = {f.database: f.reason for f in result.failures}
    assert set(reasons) == {"decoy", "files"}
    assert MASK in reasons["files"]
    assert result.setup_failed == ["decoy", "files"]
    everything = " ".join(
        [*reasons.values(), *(e.detail for e in events), caplog.text, repr(result.metadata)]
    )
    assert PASSWORD not in everything
