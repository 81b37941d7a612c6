"""``mcp_arguments``: the tools' arguments taken only as their input schemas say, and refused in plain
words, never as a pydantic error (the SDK's lax checks took ``true`` for a limit of 1)."""

from __future__ import annotations

import pytest

from memmy_kb_client.agents.mcp_arguments import check_query, list_arguments, search_arguments
from memmy_kb_client.agents.mcp_service import ToolRefused


def test_queries_are_trimmed_cut_and_not_empty():
    assert check_query("  q  ") == "q"
    assert len(check_query("x" * 5000)) == 4000
    with pytest.raises(ToolRefused, match="The query is empty"):
        check_query(" \n ")


def test_search_arguments_are_taken_as_written():
    asked = search_arguments({"query": " q ", "knowledge_bases": ["Notes"], "limit": 25})
    assert (asked.query, asked.knowledge_bases, asked.limit) == ("q", ["Notes"], 25)
    assert search_arguments({"query": "q"}).limit is None
    assert search_arguments({"query": "q", "limit": 3.0}).limit == 3  # JSON Schema's integer: 3.0 is 3
    assert search_arguments({"query": "q", "limit": None, "knowledge_bases": None}).knowledge_bases is None


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        # A boolean is no number, though pydantic's lax mode took true for 1.
        ({"query": "q", "limit": True}, "limit must be a whole number from 1 to 25, not true."),
        ({"query": "q", "limit": False}, "limit must be a whole number from 1 to 25, not false."),
        ({"query": "q", "limit": 0}, "limit must be a whole number from 1 to 25, not 0."),
        ({"query": "q", "limit": 26}, "limit must be a whole number from 1 to 25, not 26."),
        ({"query": "q", "limit": 2.5}, "limit must be a whole number from 1 to 25, not 2.5."),
        ({"query": "q", "limit": "3"}, 'limit must be a whole number from 1 to 25, not "3".'),
        (None, "search_knowledge needs a query: the words to search for, as a string."),
        ({}, "search_knowledge needs a query: the words to search for, as a string."),
        ({"query": None}, "search_knowledge needs a query: the words to search for, as a string."),
        ({"query": 5}, "The query must be a string of words to search for, not 5."),
        ({"query": ["a", "b"]}, 'The query must be a string of words to search for, not ["a", "b"].'),
        (
            {"query": "x" * 60, "query2": 1},
            'search_knowledge takes query, knowledge_bases, limit; not "query2".',
        ),
        (
            {"query": "q", "knowledge_bases": "Notes"},
            "knowledge_bases must be a list of knowledge base names or",
        ),
        ({"query": "q", "knowledge_bases": [1]}, "not [1]; leave it out to search every knowledge base"),
    ],
)
def test_search_arguments_are_refused_in_plain_words(arguments, sentence):
    with pytest.raises(ToolRefused) as refused:
        search_arguments(arguments)
    assert sentence in str(refused.value)
    assert "pydantic" not in str(refused.value)
    assert "validation error" not in str(refused.value)


def test_list_knowledge_bases_takes_no_arguments():
    list_arguments(None)
    list_arguments({})
    with pytest.raises(ToolRefused, match=r'list_knowledge_bases takes no arguments; not "query"\.'):
        list_arguments({"query": "q"})
