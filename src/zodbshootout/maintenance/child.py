"""The process one maintenance operation runs in: a request on stdin, its record on stdout.

A fresh interpreter per operation, so that its peak memory is the
operation's (and the libraries'), never a previous one's.  With ``"wait"``
in the request it says ``{"ready": true}`` just before the timed region and
starts it when a line comes on stdin (a pack under load starts on cue).  A database
holding data the tool did not write comes back as ``{"refused": reason}``;
any other error as ``{"error": reason}``.
"""

from __future__ import annotations

import json
import sys

from zodbshootout.run.skeleton import describe_error
from zodbshootout.workload.root import ForeignDataError


def _ready() -> None:
    """Say the timed region is next, then wait for the word to start it."""
    sys.stdout.write(json.dumps({"ready": True}) + "\n")
    sys.stdout.flush()
    sys.stdin.readline()


def main() -> int:
    request = json.loads(sys.stdin.readline())
    try:
        from zodbshootout.maintenance.operations import run_operation

        reply = run_operation(request, _ready) if request.get("wait") else run_operation(request)
    except ForeignDataError as e:
        reply = {"refused": str(e)}
    except Exception as e:
        reply = {"error": describe_error(e)}
    sys.stdout.write(json.dumps(reply) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
