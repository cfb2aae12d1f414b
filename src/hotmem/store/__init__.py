"""The store: one SQLite file of memories, their vectors and their lexical indexes.

It keeps connections, writes, reads, integrity, and typed reads for the search index; it does
not rank (``hotmem.retrieval`` does).
"""
