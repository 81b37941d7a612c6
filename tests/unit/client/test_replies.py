"""The client's ``TypedDict`` s of the cloud's replies (``memmy_kb_client.replies``, and the teams' in
``memmy_kb_client.team_replies``) are the response schemas
of docs/openapi.json (``make openapi`` writes it from the cloud's models): the same names, the same fields,
the same fields required, and JSON types that agree. The client may not import the core, so this test
reads the document."""

from __future__ import annotations

import json
import types
import typing
from pathlib import Path
from typing import Any, Literal, NotRequired, Union

import pytest

from memmy_kb_client import connection_replies, replies, team_replies

DOCUMENT = json.loads((Path(__file__).parents[3] / "docs" / "openapi.json").read_text(encoding="utf-8"))
SCHEMAS: dict[str, Any] = DOCUMENT["components"]["schemas"]
_REF = "#/components/schemas/"
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def _referenced(schema: Any) -> set[str]:
    """The names of the schemas ``schema`` refers to, at any depth."""
    if isinstance(schema, dict):
        ref = schema.get("$ref")
        found = {ref.removeprefix(_REF)} if isinstance(ref, str) else set()
        return found.union(*(_referenced(value) for value in schema.values()))
    if isinstance(schema, list):
        return set().union(*(_referenced(value) for value in schema))
    return set()


def _response_schemas() -> set[str]:
    """Every schema a reply of the API is (or holds), however deep."""
    names = {
        name
        for operations in DOCUMENT["paths"].values()
        for operation in operations.values()
        for response in operation.get("responses", {}).values()
        for name in _referenced(response)
    }
    while True:
        more = names.union(*(_referenced(SCHEMAS[name]) for name in names))
        if more == names:
            return names
        names = more


def _is_typed_dict(value: object) -> bool:
    return isinstance(value, type) and typing.is_typeddict(value)


def _typed_dicts() -> dict[str, type]:
    modules = (replies, team_replies, connection_replies)
    return {name: value for module in modules for name, value in vars(module).items() if _is_typed_dict(value)}


def _fields(typed_dict: type) -> dict[str, tuple[bool, Any]]:
    """Each field: whether it is required, and its type (``NotRequired`` read from the hints themselves:
    Python 3.11 counts every key of a module with postponed annotations as required)."""
    fields = {}
    for name, hint in typing.get_type_hints(typed_dict, include_extras=True).items():
        optional = typing.get_origin(hint) is NotRequired
        fields[name] = (not optional, typing.get_args(hint)[0] if optional else hint)
    return fields


def _as_json_schema(hint: Any) -> Any:
    """The JSON schema a type stands for, written as the document writes it (``anyOf`` for a union)."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_as_json_schema(arg) for arg in typing.get_args(hint)]}
    if origin is Literal:
        values = list(typing.get_args(hint))
        return {"type": "string", **({"const": values[0]} if len(values) == 1 else {"enum": values})}
    if origin is list:
        return {"type": "array", "items": _as_json_schema(typing.get_args(hint)[0])}
    if origin is dict:
        return {"type": "object", "additionalProperties": _as_json_schema(typing.get_args(hint)[1])}
    if _is_typed_dict(hint):
        return {"$ref": _REF + hint.__name__}
    if hint is object:
        return {}
    return {"type": _JSON_TYPES[hint]}


_KEPT = ("type", "items", "additionalProperties", "$ref", "anyOf", "enum", "const")


def _shape(schema: Any) -> Any:
    """A property's schema with only what says its JSON type (no title, format, bounds or default)."""
    if isinstance(schema, list):
        return [_shape(value) for value in schema]
    if not isinstance(schema, dict):
        return schema
    return {key: _shape(value) for key, value in schema.items() if key in _KEPT}


def _differences(typed_dict: type) -> list[str]:
    schema = SCHEMAS[typed_dict.__name__]
    ours, theirs = _fields(typed_dict), schema.get("properties", {})
    required = set(schema.get("required", []))
    found = [f"{name}: not in the document" for name in ours.keys() - theirs.keys()]
    found += [f"{name}: not in the client" for name in theirs.keys() - ours.keys()]
    for name in ours.keys() & theirs.keys():
        if ours[name][0] != (name in required):
            found.append(f"{name}: required {ours[name][0]} in the client, {name in required} in the document")
        if _as_json_schema(ours[name][1]) != _shape(theirs[name]):
            found.append(f"{name}: {ours[name][1]} in the client, {_shape(theirs[name])} in the document")
    return found


@pytest.mark.parametrize("name", sorted(_typed_dicts()))
def test_each_reply_type_has_the_documents_fields_and_types(name):
    assert _differences(_typed_dicts()[name]) == []


def test_every_reply_the_api_documents_has_a_type_in_the_client():
    unions = {
        name for name, value in vars(replies).items() if typing.get_origin(value) is types.UnionType and name in SCHEMAS
    }
    assert _response_schemas() == _typed_dicts().keys() | unions


def test_a_union_of_replies_is_the_documents_any_of():
    assert _as_json_schema(replies.UnauthorizedResponse) == _shape(SCHEMAS["UnauthorizedResponse"])


def test_a_field_renamed_dropped_or_retyped_is_found():
    class KnowledgeBase(typing.TypedDict):  # the cloud's, with ``recall`` renamed and ``bytes_used`` a string
        id: str
        name: str
        role: Literal["owner", "reader"]
        recall_enabled: bool
        owner: replies.Owner
        created_at: str
        file_count: int
        bytes_used: NotRequired[str]
        teams: NotRequired[list[replies.KbTeam]]

    assert sorted(_differences(KnowledgeBase)) == [
        "bytes_used: <class 'str'> in the client, {'type': 'integer'} in the document",
        "file_count: required True in the client, False in the document",
        "recall: not in the client",
        "recall_enabled: not in the document",
    ]
