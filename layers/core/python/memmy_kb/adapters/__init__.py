"""Adapters: AWS and MemOS turned into the domain's records, values and errors (docs/architecture.md, "Layers").

They implement the protocols of ``memmy_kb.domain.ports`` and may import those and the domain's vocabulary
(``memmy_kb.domain.storage``, ``memmy_kb.domain.engine``), never its rules, and never the edge.
"""
