"""``python -m genotok`` runs the command line (same as the ``genotok`` entry point)."""

import sys

from .cli.main import main

sys.exit(main())
