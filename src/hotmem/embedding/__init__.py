"""Embedders: ``hotmem-hash-v1`` (standard library) and the registry of model spaces."""
