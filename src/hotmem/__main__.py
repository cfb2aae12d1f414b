"""``python -m hotmem`` runs the CLI."""

from __future__ import annotations

import sys

from hotmem.cli import main

sys.exit(main())
