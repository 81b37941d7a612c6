"""What the cloud's ``POST /recall`` takes, for every part of the client that sends one: the caps of the
cloud's request model (``tests/unit/test_recall_contract.py`` keeps them equal). docs/architecture.md,
"Recall". Imports nothing: the hook reads it before every agent turn."""

# A query's characters after trimming: a longer prompt is searched by its beginning.
MAX_QUERY_CHARS = 4000
# Excerpts one recall may ask for (``limit``).
MAX_RECALL_LIMIT = 25
# Knowledge-base ids one recall may narrow its scope to (``knowledge_base_ids``).
MAX_RECALL_KBS = 50
