"""Embedders: ``hotmem-hash-v1`` (standard library) and the registry of model spaces."""

from __future__ import annotations

__all__ = ["SEMANTIC_MODEL"]

#: The model id of the semantic space (its embedder is a plug-in of ``registry.py``).
SEMANTIC_MODEL = "all-minilm-l6-v2"
