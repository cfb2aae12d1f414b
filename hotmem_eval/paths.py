"""Where ``hotmem-eval`` finds the committed fixture and baseline: the checkout's
``benchmarks/retrieval/`` when it runs from a checkout, else the copies installed with it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FIXTURE_DIR", "IN_CHECKOUT", "PACKAGE", "ROOT"]

PACKAGE = Path(__file__).resolve().parent
ROOT = PACKAGE.parent
#: Run from a checkout (the repository's pyproject.toml and fixture beside the package)?
IN_CHECKOUT = (ROOT / "pyproject.toml").is_file() and (ROOT / "benchmarks" / "retrieval").is_dir()
#: The committed fixture and baseline: the checkout's, else the copies in the installed wheel.
FIXTURE_DIR = ROOT / "benchmarks" / "retrieval" if IN_CHECKOUT else PACKAGE / "fixture"
