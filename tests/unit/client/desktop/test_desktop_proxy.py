"""The commands' way to the cloud through the desktop service (``/control/cloud``, ``desktop/proxy.py``)
takes every route the SDK calls, each id reaching the cloud as it would from the SDK directly: an SDK
method added later on a route the page does not use fails here, not in a person's terminal."""

from __future__ import annotations

import inspect
from urllib.parse import unquote

import httpx
import pytest

from memmy_kb_client.desktop.proxy import cli_target
from memmy_kb_client.home.control import CLOUD_PREFIX
from memmy_kb_client.sdk import ClientConfig, MemmyClient
from tests.support.mock_http import mock_http

# An id with what a client must escape, and a dot the page's form has to carry too.
IDENT = "kb.1 产品/a|b"
# These send bytes to storage after asking the cloud: the asking is ``request_upload`` and
# ``request_replacement``, called below on their own.
STORAGE = {"upload_file", "replace_file"}


def sdk_requests() -> list[tuple[str, str]]:
    """Every request the SDK's public methods make, as (method, raw path with query)."""
    seen: list[tuple[str, str]] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append((request.method, request.url.raw_path.decode("ascii")))
        return httpx.Response(200, json={"items": [], "cleanup_id": "cl_1"})

    client = MemmyClient(ClientConfig("http://cloud.test", "token"), http=mock_http(answer))
    for name, method in inspect.getmembers(MemmyClient, inspect.isfunction):
        if name.startswith("_") or name in STORAGE or name == "close":
            continue
        arguments = []
        for parameter in list(inspect.signature(method).parameters.values())[1:]:
            if parameter.kind is parameter.KEYWORD_ONLY or parameter.kind is parameter.VAR_KEYWORD:
                continue
            annotation = str(parameter.annotation)
            assert "Path" not in annotation, f"{name}: add it to STORAGE or give it a value here"
            arguments.append(
                1
                if "int" in annotation
                else True
                if "bool" in annotation
                else IDENT
                if parameter.default is parameter.empty or "str" in annotation
                else None
            )
        getattr(client, name)(*arguments)
    return seen


def test_every_route_the_sdk_calls_goes_through_the_service_as_it_would_go_directly() -> None:
    requests = sdk_requests()
    assert len({method for method, _ in requests}) == 5  # GET, POST, PUT, PATCH, DELETE: all were called
    for method, raw in requests:
        path, _, query = raw.partition("?")
        target = cli_target(method, CLOUD_PREFIX + path, query)
        assert target is not None, (method, raw)
        assert unquote(target) == unquote(raw), (method, raw)


@pytest.mark.parametrize("path", ["/control/cloud", "/control/cloudy/knowledge-bases", "/knowledge-bases"])
def test_only_paths_under_the_prefix_are_the_commands(path: str) -> None:
    assert cli_target("GET", path, "") is None


def test_a_path_that_is_no_utf_8_reaches_nothing() -> None:
    assert cli_target("GET", f"{CLOUD_PREFIX}/knowledge-bases/%FF", "") is None
