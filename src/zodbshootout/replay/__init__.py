"""``zodbshootout replay``: a recorded application's storage calls, replayed on each database.

:mod:`.plan` reads traces (zodbshootout.recording) into per-connection
transactions of storage calls; :mod:`.dataset` writes objects of the
recorded sizes (untimed); :mod:`.worker` replays a share of the recorded
connections, timing each transaction; :mod:`.runner` runs it on the runner
skeleton, into the records a mix run has (results.mix).
"""
