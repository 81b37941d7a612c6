"""The template's HTTP routes, compiled for matching a request as API Gateway's HTTP API matches it.

Literal segments beat ``{param}``, which beats greedy ``{param+}``; a route with ``Auth: {Authorizer:
NONE}`` is public, every other one is guarded by the JWT authorizer (``memmy_local.gateway.authorizer``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any
from urllib.parse import unquote

from memmy_local.template import Route, http_routes

from .http_events import GatewayError

_SERVERLESS_FUNCTION = "AWS::Serverless::Function"


@dataclass(frozen=True)
class CompiledRoute:
    """A template route with its path split into literal and ``{param}`` / ``{param+}`` segments."""

    route: Route
    authorized: bool
    segments: tuple[str, ...]

    @property
    def route_key(self) -> str:
        return f"{self.route.method} {self.route.path}"

    def specificity(self) -> tuple[int, ...]:
        """Smaller is more specific: literal segments beat parameters, which beat greedy parameters."""
        ranks = tuple(2 if s.endswith("+}") else 1 if s.startswith("{") else 0 for s in self.segments)
        return (*ranks, 1 if self.route.method == "ANY" else 0)

    def match(self, method: str, segments: list[str]) -> dict[str, str] | None:
        """The path parameters (URL-decoded) if ``method`` and ``segments`` fit this route, else None."""
        if self.route.method not in (method, "ANY"):
            return None
        params: dict[str, str] = {}
        for index, pattern in enumerate(self.segments):
            if pattern.startswith("{") and pattern.endswith("+}"):
                rest = segments[index:]
                if not rest or not "".join(rest):
                    return None
                params[pattern[1:-2]] = unquote("/".join(rest))
                return params
            if index >= len(segments):
                return None
            if pattern.startswith("{") and pattern.endswith("}"):
                if not segments[index]:
                    return None
                params[pattern[1:-1]] = unquote(segments[index])
            elif pattern != segments[index]:
                return None
        return params if len(segments) == len(self.segments) else None


def compile_routes(template: Mapping[str, Any]) -> list[CompiledRoute]:
    """The template's HTTP routes, most specific first, each knowing whether the JWT authorizer guards it."""
    public = public_route_keys(template)
    compiled = [
        CompiledRoute(route, (route.method, route.path) not in public, tuple(route.path[1:].split("/")))
        for route in http_routes(template)
    ]
    return sorted(compiled, key=CompiledRoute.specificity)


def public_route_keys(template: Mapping[str, Any]) -> set[tuple[str, str]]:
    """Routes whose event says ``Auth: {Authorizer: NONE}`` (SAM's opt-out of the default authorizer)."""
    public: set[tuple[str, str]] = set()
    for resource in template["Resources"].values():
        if resource.get("Type") != _SERVERLESS_FUNCTION:
            continue
        for event in ((resource.get("Properties") or {}).get("Events") or {}).values():
            properties = event.get("Properties") or {}
            if event.get("Type") == "HttpApi" and (properties.get("Auth") or {}).get("Authorizer") == "NONE":
                public.add((str(properties.get("Method")).upper(), str(properties.get("Path"))))
    return public


def find_route(
    routes: list[CompiledRoute], method: str, raw_path: str
) -> tuple[CompiledRoute, dict[str, str]]:
    # No trailing-slash folding: "/knowledge-bases/" is not "/knowledge-bases", as on API Gateway.
    segments = raw_path[1:].split("/")
    for route in routes:
        params = route.match(method, segments)
        if params is not None:
            return route, params
    raise GatewayError(HTTPStatus.NOT_FOUND)
