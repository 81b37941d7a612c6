"""The ``service`` fixture: the handlers in-process on moto (provisioned from template.yaml) and the emulator."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto import mock_aws

from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore
from memmy_kb.adapters.dynamodb.profiles import DynamoProfileStore
from memmy_kb.adapters.dynamodb.table import DynamoTable
from memmy_local.provision import provision
from memmy_local.template import function_environment, http_routes, load_template
from tests.support.emulator import EmulatorHandle
from tests.support.events import FakeLambdaContext, claims_for, http_event
from tests.support.iam import missing_permissions, needs_of, record_aws_calls


@dataclass
class Reply:
    status: int
    body: Any
    headers: dict[str, str]


@dataclass
class Service:
    """Calls the real handlers with HTTP API events, routed by the template's routes."""

    template: dict[str, Any]
    refs: dict[str, str]
    memos: EmulatorHandle
    _routes: list[tuple[str, re.Pattern[str], str, str]] = field(default_factory=list)
    _functions: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for route in http_routes(self.template):
            pattern = re.compile("^" + re.sub(r"\{(\w+)\}", r"(?P<\1>[^/]+)", route.path) + "$")
            module = "functions." + route.code_uri.strip("/").split("/")[-1] + ".app"
            self._routes.append((route.method, pattern, route.path, module))
            self._functions[module] = route.function
        # Physical names back to logical ids, for the IAM check.
        self._logical = {
            value: name for name, value in self.refs.items() if "." not in name and "::" not in name
        }

    def call(
        self,
        method: str,
        path: str,
        user: str | None = "alice",
        *,
        body: Any = None,
        headers: dict[str, str] | None = None,
        query: dict[str, str] | None = None,
        claims: dict[str, str] | None = None,
    ) -> Reply:
        route_path, module, match = self._match(method, path)
        event = http_event(
            method,
            path,
            route=route_path,
            path_parameters=match.groupdict() or None,
            claims=claims if claims is not None else (claims_for(user) if user else None),
            body=body,
            headers=headers,
            query=query,
        )
        handler = importlib.import_module(module).lambda_handler
        with record_aws_calls() as calls:
            result = handler(event, FakeLambdaContext(function_name=module))
        needs = [need for call in calls for need in needs_of(*call, self._logical)]
        missing = missing_permissions(self.template, self._functions[module], needs)
        assert not missing, f"{self._functions[module]} lacks permissions in template.yaml: {missing}"
        raw = result.get("body") or ""
        return Reply(result["statusCode"], json.loads(raw) if raw else None, result.get("headers") or {})

    def _match(self, method: str, path: str) -> tuple[str, str, re.Match[str]]:
        for route_method, pattern, route_path, module in self._routes:
            match = pattern.match(path)
            if route_method == method and match:
                return route_path, module, match
        raise AssertionError(f"no route for {method} {path} in template.yaml")

    @property
    def stores(self) -> Stores:
        """The table's stores (KBs and grants, contents, profiles), for seeding state and checking it."""
        return stores_for(self.refs["Table"])

    def function_module(self, name: str) -> Any:
        return importlib.import_module(f"functions.{name}.app")

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        """Run the handler of template function ``function`` (logical id) with ``event``, IAM-checked.

        For functions without a route (queue consumers, scheduled jobs).
        """
        code_uri = self.template["Resources"][function]["Properties"]["CodeUri"]
        module = self.function_module(code_uri.strip("/").split("/")[-1])
        with record_aws_calls() as calls:
            result = module.lambda_handler(event, FakeLambdaContext(function_name=function))
        needs = [need for call in calls for need in needs_of(*call, self._logical)]
        missing = missing_permissions(self.template, function, needs)
        assert not missing, f"{function} lacks permissions in template.yaml: {missing}"
        return result


def _reset_caches() -> None:
    from aws_lambda_powertools.utilities import parameters

    from memmy_kb.api.dependencies import reset_dependencies
    from memmy_kb.api.idempotency import reset_idempotency

    reset_dependencies()
    reset_idempotency()
    parameters.clear_caches()


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_SESSION_TOKEN": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "POWERTOOLS_TRACE_DISABLED": "true",
        "POWERTOOLS_METRICS_NAMESPACE": "MemmyTest",
    }.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


@pytest.fixture
def service(
    aws_env: None, memos_emulator: EmulatorHandle, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Service]:
    template = load_template()
    with mock_aws():
        resources = provision(
            template,
            endpoint_url=None,
            memos_api_key=memos_emulator.api_key,
            parameters={
                "MemosBaseUrl": memos_emulator.base_url,
                "JwtIssuer": "memmy-test",
                "JwtAudience": "memmy-kb",
            },
        )
        functions = {r.function for r in http_routes(template)} | {
            name for name, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"
        }
        for name in functions:
            for key, value in function_environment(template, name, resources.refs).items():
                monkeypatch.setenv(key, value)
        _reset_caches()
        yield Service(template=template, refs=resources.refs, memos=memos_emulator)
        _reset_caches()


@dataclass(frozen=True)
class Stores:
    """The DynamoDB adapters on the service's table, as the handlers build them: for seeding and checks."""

    table: DynamoTable
    kbs: DynamoKnowledgeBaseStore
    contents: DynamoContentStore
    profiles: DynamoProfileStore


def stores_for(table_name: str) -> Stores:
    import boto3

    table = DynamoTable(table_name, boto3.client("dynamodb", region_name="us-east-1"))
    return Stores(table, DynamoKnowledgeBaseStore(table), DynamoContentStore(table), DynamoProfileStore(table))
