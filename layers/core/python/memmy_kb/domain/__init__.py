"""The rules: who owns and who may read what, the recall scope, files, uploads and their ingest.

A package per feature (``recall``, ``uploads``, ``fingerprints``, ``knowledge_bases``, ``sharing``,
``deletion``, ``reconcile``), the ports in ``memmy_kb.domain.ports``, and here only the modules every
feature shares (docs/architecture.md, "Module map").

Domain modules take ports (``memmy_kb.domain.ports``), speak their own vocabulary (``memmy_kb.domain.storage``,
``memmy_kb.domain.engine``), raise ``memmy_kb.errors`` refusals, and import only the base modules besides:
never an adapter, never the edge (docs/architecture.md, "Layers").
"""
