"""The knowledge base: curated optimization patterns (patterns/*.md) and a store of the gains runs made.

- patterns.py: the patterns that ship with kernelopt, and which fit a diagnosis.
- store.py: the gains every run records (SQLite by default, PostgreSQL at a URL).
- recall.py: the optimizer prompt's KNOWLEDGE BASE section, and the recording of a gain.
"""
