"""The rules: who owns and who may read what, the recall scope, files, uploads and their ingest.

Domain modules take ports (``memmy_kb.domain.ports``), raise ``memmy_kb.errors`` refusals, and import
only adapters' values and errors, never the edge (docs/architecture.md, "Layers").
"""
