"""zodbshootout versions: the same configuration measured in several environments.

A variant is one or more requirements (``ZEO==6.1``, ``RelStorage @ ../pr``)
and a Python; each gets a virtual environment of its own, built once and
cached (:mod:`.environments`), and the tool runs in each of them in
interleaved rounds (:mod:`.schedule`, :mod:`.rounds`), whose results are
merged per variant (:mod:`.combine`) into one versions file
(:mod:`zodbshootout.results.versions`) that ``compare`` reads.
"""
