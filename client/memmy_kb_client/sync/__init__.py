"""A folder kept in sync with a knowledge base: ``memmy-kb sync DIR KB`` and the desktop's linked folders
(docs/sync.md; the modules in docs/architecture.md, "Client")."""
