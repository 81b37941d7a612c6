"""memmy_kb, the core library of the Memmy knowledge-base service (the functions' Lambda layer).

Layers, each importing only the ones below it (checked by tests/unit/repository/test_layers.py):

* ``memmy_kb.api``: the edge (HTTP resolver, identity, idempotency, API bodies, events, what routes receive);
* ``memmy_kb.composition``: the composition root, building the adapters behind the ports;
* ``memmy_kb.adapters``: DynamoDB, S3, Step Functions, SQS and MemOS, implementing the domain's ports;
* ``memmy_kb.domain``: the rules, over the ports in ``memmy_kb.domain.ports`` and the values and errors of
  ``memmy_kb.domain.storage`` and ``memmy_kb.domain.engine``;
* ``memmy_kb.errors``, ``memmy_kb.records``, ``memmy_kb.settings``, ``memmy_kb.observability``, ``memmy_kb.cold_start``,
  ``memmy_kb.invocation_deadline``: the base, shared by all.

See docs/architecture.md.
"""
