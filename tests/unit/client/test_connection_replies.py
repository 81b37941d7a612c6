"""The client's ``TypedDict`` s of the connected apps' replies (``memmy_kb_client.connection_replies``) are the
shapes the cloud answers ``GET /me/connections`` with: the same fields, all required, and JSON types that
agree. The shapes are written here as the cloud's side fixes them (docs/desktop.md, "Connected apps"); once
docs/openapi.json documents the route, ``test_replies.py`` holds these types to the document as it does the
others'."""

from __future__ import annotations

import types
import typing
from typing import Any, Literal, NotRequired, Union

import pytest

from memmy_kb_client import connection_replies

NULLABLE_TEXT = {"anyOf": ["string", "null"]}
# Each reply: its fields and their JSON types ("string", "null", a list of one type, an enum, another reply).
SHAPES: dict[str, dict[str, Any]] = {
    "Connection": {
        "id": "string",
        "client_id": "string",
        "client_name": NULLABLE_TEXT,
        "scope": ["string"],
        "since": "string",
        "last_used": NULLABLE_TEXT,
        "state": {"enum": ["active", "revoked"]},
        "revoked_at": NULLABLE_TEXT,
    },
    "ConnectionActivity": {
        "kind": {"enum": ["connection_added", "connection_revoked"]},
        "connection_id": "string",
        "client_name": NULLABLE_TEXT,
        "at": "string",
    },
    "ConnectionList": {"connections": ["Connection"], "activity": ["ConnectionActivity"]},
}
_JSON_TYPES = {str: "string", int: "integer", bool: "boolean", type(None): "null"}


def _shape(hint: Any) -> Any:
    """A field's type written as ``SHAPES`` writes it."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        return {"anyOf": [_shape(arg) for arg in typing.get_args(hint)]}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin is list:
        return [_shape(typing.get_args(hint)[0])]
    if isinstance(hint, type) and typing.is_typeddict(hint):
        return hint.__name__
    return _JSON_TYPES[hint]


def _differences(typed_dict: type, expected: dict[str, Any]) -> list[str]:
    # ``NotRequired`` read from the hints themselves: Python 3.11 counts every key of a module with
    # postponed annotations as required.
    hints = typing.get_type_hints(typed_dict, include_extras=True)
    optional = {name for name, hint in hints.items() if typing.get_origin(hint) is NotRequired}
    hints = {name: typing.get_args(hint)[0] if name in optional else hint for name, hint in hints.items()}
    found = [f"{name}: not in the client" for name in expected.keys() - hints.keys()]
    found += [f"{name}: not in the cloud's reply" for name in hints.keys() - expected.keys()]
    found += [f"{name}: optional in the client" for name in sorted(optional)]
    for name in hints.keys() & expected.keys():
        if _shape(hints[name]) != expected[name]:
            found.append(
                f"{name}: {_shape(hints[name])} in the client, {expected[name]} in the cloud's reply"
            )
    return found


def _typed_dicts() -> dict[str, type]:
    return {
        name: value
        for name, value in vars(connection_replies).items()
        if isinstance(value, type) and typing.is_typeddict(value)
    }


def test_each_reply_of_the_cloud_has_a_type_and_no_other():
    assert _typed_dicts().keys() == SHAPES.keys()


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_each_reply_type_has_the_fields_and_types_the_cloud_answers(name):
    assert _differences(_typed_dicts()[name], SHAPES[name]) == []


def test_a_field_renamed_dropped_or_retyped_is_found():
    class Connection(typing.TypedDict):  # ``client_name`` renamed, ``scope`` a string, ``since`` optional
        id: str
        client_id: str
        name: str | None
        scope: str
        since: NotRequired[str]
        last_used: str | None
        state: Literal["active", "revoked"]
        revoked_at: str | None

    assert sorted(_differences(Connection, SHAPES["Connection"])) == [
        "client_name: not in the client",
        "name: not in the cloud's reply",
        "scope: string in the client, ['string'] in the cloud's reply",
        "since: optional in the client",
    ]
