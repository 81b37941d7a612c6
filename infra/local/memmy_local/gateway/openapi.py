"""The service's OpenAPI document, generated from the functions' Powertools resolvers.

Every function behind the HTTP API with a Powertools resolver contributes its routes; the committed copy
(``docs/openapi.json``) is checked against a fresh generation in the tests, so it cannot go stale. The
remote MCP endpoint's function has no resolver and is not in it: ``POST /mcp`` speaks JSON-RPC (the MCP
specification describes it), and its metadata is RFC 9728's (docs/architecture.md, "The remote MCP endpoint").
"""

from __future__ import annotations

import json
from typing import Any

from memmy_local.gateway.routing import public_route_keys
from memmy_local.lambdas.handlers import load_function_module, repo_root
from memmy_local.template import http_routes, load_template

TITLE = "Memmy knowledge-base service"
VERSION = "1.0.0"
DOCUMENT_PATH = "docs/openapi.json"


def generate() -> dict[str, Any]:
    """One OpenAPI 3.1 document for every route in template.yaml, with bearer-JWT security (``security: []``
    on a route the template opens with ``Auth: {Authorizer: NONE}``)."""
    from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer

    merged: dict[str, Any] = {}
    template = load_template()
    public = public_route_keys(template)
    modules = {(r.code_uri, r.handler) for r in http_routes(template)}
    for code_uri, handler in sorted(modules):
        app = getattr(load_function_module(code_uri, handler), "app", None)
        if app is None:  # not a REST function (the MCP endpoint)
            continue
        schema = app.get_openapi_schema(
            title=TITLE,
            version=VERSION,
            security_schemes={"memmyJwt": HTTPBearer(bearerFormat="JWT")},
            security=[{"memmyJwt": []}],
        ).model_dump(mode="json", by_alias=True, exclude_none=True)
        if not merged:
            merged = {**schema, "paths": {}, "components": {**schema.get("components", {}), "schemas": {}}}
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                operation["responses"] = dict(sorted(operation.get("responses", {}).items()))
                if (method.upper(), path) in public:
                    operation["security"] = []
                merged["paths"].setdefault(path, {})[method] = operation
        merged["components"]["schemas"].update(schema.get("components", {}).get("schemas", {}))
    merged["paths"] = dict(sorted(merged["paths"].items()))
    merged["components"]["schemas"] = dict(sorted(merged["components"]["schemas"].items()))
    return merged


def render() -> str:
    return json.dumps(generate(), indent=2, ensure_ascii=False, sort_keys=False) + "\n"


def write() -> str:
    path = repo_root() / DOCUMENT_PATH
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render(), encoding="utf-8")
    return str(path)
