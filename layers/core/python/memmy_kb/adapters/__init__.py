"""Adapters: AWS and MemOS turned into records, values and adapter errors (docs/architecture.md, "Layers").

Nothing here imports the domain or the edge; the domain depends on these modules through the protocols
in ``memmy_kb.domain.ports``.
"""
