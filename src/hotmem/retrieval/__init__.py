"""Retrieval: profiles, fusion, the search index and its two engines, search and explain.

``hotmem.search_memories``, ``hotmem.explain`` and ``hotmem.diagnose`` are its public face
(``hotmem/__init__.py`` exports them); ``docs/architecture.md`` draws the modules.
"""
