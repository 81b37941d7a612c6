"""``memmy_kb.api.mcp``: calling a tool, the same in both protocol generations: an unknown tool or arguments
that are not an object is -32602; arguments the tool refuses and a tool's own error are a result the model
reads; a tool that raises is logged and answered -32603 without what it raised."""

from __future__ import annotations

import json
from http import HTTPStatus

import pytest

from tests.support.mcp_protocol import legacy, modern


def call(era: str, params: dict):  # type: ignore[no-untyped-def]
    return modern("tools/call", params) if era == "modern" else legacy("tools/call", params)


ERAS = ["modern", "legacy"]
INVALID_STATUS = {"modern": HTTPStatus.BAD_REQUEST, "legacy": HTTPStatus.OK}


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"name": "fetch", "arguments": {}}, "Unknown tool: fetch."),
        ({"name": "Search"}, "Unknown tool: Search."),
        ({"arguments": {}}, "tools/call needs the tool's name (params.name, a string)."),
        (
            {"name": "search", "arguments": ["query"]},
            "A tool's arguments (params.arguments) must be an object.",
        ),
        (
            {"name": "search", "arguments": "query=x"},
            "A tool's arguments (params.arguments) must be an object.",
        ),
    ],
)
def test_an_unknown_tool_or_arguments_that_are_no_object_are_invalid_params(era, params, message):
    answer = call(era, params)
    assert answer.status == INVALID_STATUS[era]
    assert answer.error == {"code": -32602, "message": message}


@pytest.mark.parametrize("era", ERAS)
def test_arguments_the_tool_refuses_are_a_tool_error_the_model_can_correct(era):
    # MCP 2025-11-25 (tools, "Error Handling"): input validation errors are tool execution errors.
    answer = call(era, {"name": "refuse", "arguments": {"query": ""}})
    assert answer.status == HTTPStatus.OK
    assert answer.result["isError"] is True
    assert answer.result["content"] == [{"type": "text", "text": "query must be 1-4000 characters."}]


@pytest.mark.parametrize("era", ERAS)
@pytest.mark.parametrize("arguments", [None, {}])
def test_absent_or_null_arguments_are_an_empty_object(era, arguments):
    params = {"name": "search"} if arguments is None else {"name": "search", "arguments": arguments}
    assert call(era, params).result["structuredContent"] == {"echo": {}}


@pytest.mark.parametrize("era", ERAS)
def test_a_tools_own_error_is_a_result_with_is_error_and_its_sentence(era):
    result = call(era, {"name": "rate_limited", "arguments": {}}).result
    assert result["isError"] is True
    assert result["content"] == [{"type": "text", "text": "Too many searches; try again in a minute."}]
    assert "structuredContent" not in result


@pytest.mark.parametrize("era", ERAS)
def test_a_result_carries_the_text_and_the_structured_content(era):
    result = call(era, {"name": "search", "arguments": {"query": "报销"}}).result
    assert result["content"] == [{"type": "text", "text": json.dumps({"echo": {"query": "报销"}})}]
    assert result["structuredContent"] == {"echo": {"query": "报销"}}
    assert result["isError"] is False


@pytest.mark.parametrize("era", ERAS)
def test_a_tool_that_raises_is_an_internal_error_that_hides_what_it_raised_and_is_logged(era, caplog):
    answer = call(era, {"name": "crash", "arguments": {}})
    assert answer.status == HTTPStatus.OK
    assert answer.error == {"code": -32603, "message": "Internal error: the tool failed; try again later."}
    assert "memmy-prod-table" not in json.dumps(answer.body)
    logged = [
        (r.levelname, r.getMessage(), getattr(r, "tool", None), r.exc_info and r.exc_info[0])
        for r in caplog.records
    ]
    assert logged == [("ERROR", "An MCP tool raised", "crash", RuntimeError)]
