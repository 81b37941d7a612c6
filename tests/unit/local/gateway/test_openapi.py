"""The committed OpenAPI document is what the resolvers generate, and it covers every template route."""

from __future__ import annotations

import json
import re

from memmy_local.gateway import openapi
from memmy_local.gateway.routing import public_route_keys
from memmy_local.lambdas.handlers import repo_root
from memmy_local.template import http_routes, load_template
from tests.support.mcp_auth_events import AUTHORIZATION_SERVER_ROUTES


def test_committed_document_is_current():
    committed = (repo_root() / openapi.DOCUMENT_PATH).read_text(encoding="utf-8")
    assert json.loads(committed) == openapi.generate(), "docs/openapi.json is stale: run `make openapi`"


ENDPOINT_ROUTES = {
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
}
# The MCP clients' authorization server: OAuth (RFC 8414, 7591, 6749, 7009) and HTML pages, no resolver.
AUTHORIZATION_ROUTES = AUTHORIZATION_SERVER_ROUTES
MCP_ROUTES = ENDPOINT_ROUTES | AUTHORIZATION_ROUTES


def test_the_mcp_endpoint_and_its_authorization_server_alone_are_left_out_they_speak_json_rpc_and_oauth():
    document = openapi.generate()
    left_out = {(r.method, r.path) for r in http_routes(load_template()) if r.path not in document["paths"]}
    assert left_out == MCP_ROUTES
    functions = {(r.method, r.path): r.function for r in http_routes(load_template())}
    assert {functions[route] for route in ENDPOINT_ROUTES} == {"McpFunction"}
    assert {functions[route] for route in AUTHORIZATION_ROUTES} == {"McpAuthFunction"}


def test_every_template_route_is_documented_with_the_error_shape():
    document = openapi.generate()
    public = public_route_keys(load_template()) - MCP_ROUTES
    assert public == {("GET", "/login-configuration")}
    for route in http_routes(load_template()):
        if (route.method, route.path) in MCP_ROUTES:
            continue
        operation = document["paths"][route.path][route.method.lower()]
        # A public route cannot answer 401 and says it needs no token; every other one can and does.
        assert ("401" in operation["responses"]) is ((route.method, route.path) not in public), route
        assert ("security" in operation and operation["security"] == []) is ((route.method, route.path) in public)
        assert "422" in operation["responses"], route
        assert operation["responses"]["422"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/ErrorResponse"
        }
    assert document["security"] == [{"memmyJwt": []}]


def test_documented_success_statuses_match_the_contract():
    paths = openapi.generate()["paths"]
    assert "201" in paths["/knowledge-bases"]["post"]["responses"]
    assert "200" in paths["/knowledge-bases"]["get"]["responses"]
    assert "404" in paths["/knowledge-bases/{kb_id}"]["get"]["responses"]
    assert "200" in paths["/me"]["put"]["responses"]


def test_every_operation_has_its_own_readable_operation_id():
    # Powertools' default id joins the function name, the path and the method with underscores
    # (``dismiss_upload_knowledge_bases__kb_id__uploads__upload_id__delete``): every route names its own.
    ids = [
        operation.get("operationId", "")
        for operations in openapi.generate()["paths"].values()
        for operation in operations.values()
    ]
    assert [i for i in ids if not re.fullmatch(r"[a-z]+(?:[A-Z][a-z]+)*", i)] == []
    assert len(set(ids)) == len(ids)
