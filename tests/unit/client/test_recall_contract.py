"""The client's copy of the recall request's caps (``memmy_kb_client.recall_contract``) is the cloud's:
the client may not import the core, so this test reads both."""

from __future__ import annotations

import ast
import inspect

from memmy_kb.api.models import recall as cloud
from memmy_kb_client import recall_contract as client


def test_the_clients_recall_caps_are_the_clouds():
    assert (client.MAX_QUERY_CHARS, client.MAX_RECALL_LIMIT, client.MAX_RECALL_KBS) == (
        cloud.MAX_QUERY_LENGTH,
        cloud.MAX_RECALL_LIMIT,
        cloud.MAX_RECALL_KBS,
    )


def test_each_agents_context_limit_is_one_the_cloud_takes():
    for limit in client.CONTEXT_LIMITS.values():
        assert cloud.ContextLimit.model_validate(limit).model_dump() == limit
    assert client.recall_body(" q ", "codex") == {"query": "q", "context_limit": {"unit": "utf8_bytes", "max": 9000}}
    assert client.recall_body("q", "gemini") == client.recall_body("q") == {"query": "q"}


def _typed_dict_fields(name: str) -> dict[str, bool]:
    """The fields of the ``TypedDict`` ``name`` of ``recall_contract``, each with whether it is required.
    Read from the source: the module defines its types for mypy only (the hook imports it, and no typing)."""
    tree = ast.parse(inspect.getsource(client))
    (found,) = [node for node in ast.walk(tree) if isinstance(node, ast.ClassDef) and node.name == name]
    return {
        field.target.id: not (
            isinstance(field.annotation, ast.Subscript) and ast.unparse(field.annotation.value) == "NotRequired"
        )
        for field in found.body
        if isinstance(field, ast.AnnAssign) and isinstance(field.target, ast.Name)
    }


def test_the_clients_recall_request_type_has_the_clouds_fields():
    for name, model in (("RecallRequest", cloud.RecallRequest), ("ContextLimit", cloud.ContextLimit)):
        expected = {field: info.is_required() for field, info in model.model_fields.items()}
        assert _typed_dict_fields(name) == expected
