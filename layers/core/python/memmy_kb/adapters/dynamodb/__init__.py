"""The DynamoDB adapter: one table (``table``), one store per aggregate (KBs and grants, contents,
profiles, activity and rate counters, create intents, deletes and their cleanups), each implementing its
port in ``memmy_kb.domain.ports``."""
