"""``python -m zodbshootout`` runs the command line tool."""

import sys

from zodbshootout.cli.entry import main

sys.exit(main())
