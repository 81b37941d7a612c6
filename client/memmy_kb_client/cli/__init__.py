"""The ``memmy-kb`` command for people: one module per command group, ``main`` builds the parser
(docs/architecture.md, "Client"). Imports nothing, so ``python -m memmy_kb_client.cli`` stays cheap."""
