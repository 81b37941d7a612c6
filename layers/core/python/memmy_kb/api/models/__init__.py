"""The API's request and response bodies: what clients send and see (docs/openapi.json).

They differ from the stored records (``memmy_kb.records``) on purpose: the MemOS ids, for one, never
leave the service. Each response body is built from what the domain returns by a ``from_*`` classmethod,
so the mapping from domain to wire lives here and nowhere else.

One module per route module (``memmy_kb.api.routes``), plus ``base`` (``ApiModel``, ``Name``) and
``errors`` (the error shape every route answers): a function imports the bodies of the routes it serves
and nothing else. This package re-exports nothing, so importing one of its modules never loads the others.
"""
