"""The DynamoDB adapter: one table (``table``), one store per aggregate (KBs and grants, contents,
profiles), each implementing its port in ``memmy_kb.domain.ports``."""
