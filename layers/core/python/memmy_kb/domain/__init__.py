"""The rules: who owns and who may read what, the recall scope, files, uploads and their ingest.

Domain modules take ports (``memmy_kb.domain.ports``), speak their own vocabulary (``memmy_kb.domain.storage``,
``memmy_kb.domain.engine``), raise ``memmy_kb.errors`` refusals, and import only the base modules besides:
never an adapter, never the edge (docs/architecture.md, "Layers").
"""
