"""Evaluate HotMem retrieval on the committed fixture (or your own).

    uv run python scripts/retrieval_eval.py [--corpus P] [--queries P] [--output P] [--report P]
                                            [--top-k N] [--repeat N] [--export-dir D]
                                            [--profile NAME ...] [--profiles FILE.toml]
                                            [--check-baseline | --update-baseline]

The same command is installed as ``hotmem-eval``; see docs/retrieval-quality.md.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run from a checkout without installing: the repository root holds hotmem_eval/.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from hotmem_eval.cli import main

if __name__ == "__main__":
    sys.exit(main())
