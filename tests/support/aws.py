"""The ``service`` fixture: the handlers in-process on moto (provisioned from template.yaml) and the emulator.

moto is provisioned once per test module (``_moto_stack``); before each test ``service`` empties the
table, the bucket and the queues, sets the functions' environment and clears the handlers' caches, so
no test sees another's items. The emulator is reset per test by ``memos_emulator``.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
from moto import mock_aws

from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore
from memmy_kb.adapters.dynamodb.profiles import DynamoProfileStore
from memmy_kb.adapters.dynamodb.table import DynamoTable
from memmy_local.aws.dynamodb import local_dynamodb
from memmy_local.memos_emulator.server import MemosEmulator
from memmy_local.provision.resources import provision
from memmy_local.template import function_environment, http_routes, load_template
from tests.support.emulator import API_KEY, EmulatorHandle
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
        base64_body: bool = False,
        remaining_ms: int = 10_000,
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
        if base64_body:
            event["isBase64Encoded"] = True
        handler = importlib.import_module(module).lambda_handler
        with record_aws_calls() as calls:
            result = handler(event, FakeLambdaContext(function_name=module, remaining_ms=remaining_ms))
        needs = [need for call in calls for need in needs_of(*call, self._logical)]
        missing = missing_permissions(self.template, self._functions[module], needs)
        assert not missing, f"{self._functions[module]} lacks permissions in template.yaml: {missing}"
        raw = result.get("body") or ""
        headers = result.get("headers") or {}
        is_page = any(k.lower() == "content-type" and v.startswith("text/html") for k, v in headers.items())
        # An HTML page (the MCP authorization server's) as its text; every other body is JSON.
        return Reply(result["statusCode"], raw if is_page else json.loads(raw) if raw else None, headers)

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

    def override(self, dependency: Callable[..., Any], replacement: Callable[..., Any]) -> None:
        """What routes receive from ``dependency`` (a provider their ``Depends`` names, such as
        ``composition.get_kb_store``) comes from ``replacement`` instead, in every API function's resolver,
        until the test ends."""
        for resolver in self._resolvers():
            resolver.dependency_overrides[dependency] = replacement

    def clear_overrides(self) -> None:
        for resolver in self._resolvers():
            resolver.dependency_overrides.clear()

    def _resolvers(self) -> list[Any]:
        """The resolver of every routed function that has one (``mcp`` and ``mcp_auth`` answer without a
        resolver). A function whose code folder is not in this checkout has none to override either; its
        routes fail when called."""
        resolvers = []
        for name in dict.fromkeys(m.split(".")[1] for *_, m in self._routes):
            try:
                module = self.function_module(name)
            except ModuleNotFoundError as err:
                if err.name not in (f"functions.{name}", f"functions.{name}.app"):
                    raise
                continue
            if hasattr(module, "app"):
                resolvers.append(module.app)
        return resolvers

    def invoke(self, function: str, event: dict[str, Any]) -> Any:
        """Run the handler of template function ``function`` (logical id) with ``event``, IAM-checked.

        For functions without a route (queue consumers, scheduled jobs).
        """
        properties = self.template["Resources"][function]["Properties"]
        module = self.function_module(properties["CodeUri"].strip("/").split("/")[-1])
        # The invocation gets the function's whole timeout, as a fresh Lambda invocation does.
        timeout = properties.get("Timeout", self.template["Globals"]["Function"]["Timeout"])
        context = FakeLambdaContext(function_name=function, remaining_ms=int(timeout) * 1000)
        with record_aws_calls() as calls:
            result = module.lambda_handler(event, context)
        needs = [need for call in calls for need in needs_of(*call, self._logical)]
        missing = missing_permissions(self.template, function, needs)
        assert not missing, f"{function} lacks permissions in template.yaml: {missing}"
        return result


def _reset_caches() -> None:
    from memmy_kb.composition import reset_composition

    reset_composition()


_AWS_ENV: dict[str, str] = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_NAMESPACE": "MemmyTest",
}
_AWS_ENV_UNSET = ("AWS_ENDPOINT_URL", "AWS_PROFILE")


def _set_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in _AWS_ENV.items():
        monkeypatch.setenv(key, value)
    for key in _AWS_ENV_UNSET:
        monkeypatch.delenv(key, raising=False)


@pytest.fixture
def aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    _set_aws_env(monkeypatch)


@dataclass(frozen=True)
class _Stack:
    """What ``template.yaml`` provisioned on moto, once per test module (see ``_moto_stack``)."""

    template: dict[str, Any]
    refs: dict[str, str]
    environment: dict[str, str]  # the union of the functions' environments, as the tests set it
    tables: dict[str, list[str]]  # physical table name -> its key attributes
    buckets: list[str]
    queues: list[str]  # queue URLs
    clients: dict[str, Any] = field(repr=False)  # boto3 clients on moto, built once: for the resets


_NO_EXECUTIONS: Any = {"stepfunctions": {"execute_state_machine": False}, "lambda": {"use_docker": False}}


def physical_names(template: dict[str, Any], refs: dict[str, str], resource_type: str) -> list[str]:
    return [
        refs[logical_id]
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == resource_type and logical_id in refs
    ]


@pytest.fixture(scope="module")
def _moto_stack(_memos_emulator_server: MemosEmulator) -> Iterator[_Stack]:
    """moto, active for the whole module, with everything from template.yaml provisioned once.

    Entering ``mock_aws`` and provisioning for every test was most of the integration tier's time;
    ``service`` empties the resources before each test instead (``_reset_stack``).
    """
    import boto3

    template = load_template()
    with pytest.MonkeyPatch.context() as mp:
        _set_aws_env(mp)
        # Step Functions executions stay canned here (the tests run the cleanup task themselves): said
        # explicitly, because an in-process moto server started by another test module in this worker
        # may have switched execution on in moto's process-wide config.
        # moto's DynamoDB as the local stack runs it (memmy_local.aws.dynamodb: no table copy per transaction,
        # queries read their partition); moto's results, ordering and cancellation reasons are unchanged.
        with local_dynamodb(), mock_aws(config=_NO_EXECUTIONS):
            resources = provision(
                template,
                endpoint_url=None,
                memos_api_key=API_KEY,
                parameters={
                    "MemosBaseUrl": _memos_emulator_server.base_url,
                    "JwtIssuer": "memmy-test",
                    "JwtAudience": "memmy-kb",
                },
            )
            refs = resources.refs
            functions = {r.function for r in http_routes(template)} | {
                name for name, r in template["Resources"].items() if r["Type"] == "AWS::Serverless::Function"
            }
            environment: dict[str, str] = {}
            for name in sorted(functions):  # the functions agree on every shared variable
                environment.update(function_environment(template, name, refs))
            clients: dict[str, Any] = {
                name: boto3.client(name, region_name="us-east-1") for name in ("dynamodb", "s3", "sqs")
            }
            tables = {
                table: [
                    key["AttributeName"]
                    for key in clients["dynamodb"].describe_table(TableName=table)["Table"]["KeySchema"]
                ]
                for table in physical_names(template, refs, "AWS::DynamoDB::Table")
            }
            yield _Stack(
                template=template,
                refs=refs,
                environment=environment,
                tables=tables,
                buckets=physical_names(template, refs, "AWS::S3::Bucket"),
                queues=physical_names(template, refs, "AWS::SQS::Queue"),
                clients=clients,
            )


def write_batches(dynamodb: Any, table: str, requests: list[dict[str, Any]]) -> None:
    """``requests`` (puts or deletes) in batches of 25, each batch's unprocessed ones sent again."""
    for start in range(0, len(requests), 25):
        batch = requests[start : start + 25]
        while batch:
            batch = dynamodb.batch_write_item(RequestItems={table: batch})["UnprocessedItems"].get(table, [])


def _reset_stack(stack: _Stack) -> None:
    """Empty what a test may have filled: the table's items, the bucket's objects, the queues' messages.

    The resources themselves and their configuration (indexes, TTL, notifications, redrive, the secret
    and its value) stay as provisioned.
    """
    dynamodb, s3, sqs = (stack.clients[name] for name in ("dynamodb", "s3", "sqs"))
    for table, key_names in stack.tables.items():
        names = {f"#k{i}": name for i, name in enumerate(key_names)}
        keys: list[dict[str, Any]] = []
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=table, ProjectionExpression=", ".join(names), ExpressionAttributeNames=names
        ):
            keys.extend(page["Items"])
        write_batches(dynamodb, table, [{"DeleteRequest": {"Key": key}} for key in keys])

    for bucket in stack.buckets:
        # Not versioned locally (provision ignores VersioningConfiguration): keys are enough.
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        for upload in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []):
            s3.abort_multipart_upload(Bucket=bucket, Key=upload["Key"], UploadId=upload["UploadId"])

    # After S3 (only ObjectCreated is wired to the queue, but in this order nothing can be left behind).
    # moto, like SQS, refuses a second PurgeQueue within 60 s unless told not to.
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MOTO_SQS_ENFORCE_STRICT_QUEUE_PURGE_BEHAVIOUR", "false")
        for queue_url in stack.queues:
            sqs.purge_queue(QueueUrl=queue_url)  # visible, in-flight and delayed messages alike


@pytest.fixture
def service(
    aws_env: None,
    memos_emulator: EmulatorHandle,
    monkeypatch: pytest.MonkeyPatch,
    _moto_stack: _Stack,
) -> Iterator[Service]:
    """The handlers on the module's moto stack, emptied for this test, with the functions' environment."""
    _reset_stack(_moto_stack)
    for key, value in _moto_stack.environment.items():
        monkeypatch.setenv(key, value)
    _reset_caches()
    service = Service(
        template=copy.deepcopy(_moto_stack.template), refs=dict(_moto_stack.refs), memos=memos_emulator
    )
    yield service
    service.clear_overrides()
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


# The emulator's two projects as two MemOS backends: the service's own project and the other one.
TWO_BACKENDS: dict[str, str] = {"p1": "memmy", "p2": "someone-else"}


@contextlib.contextmanager
def memos_backends(service: Service, caps: dict[str, int]) -> Iterator[Service]:
    """The service with the emulator's projects as MemOS backends (``TWO_BACKENDS``, those named in
    ``caps``, with those caps) in its secret; the secret put back after."""
    import boto3

    from tests.support.emulator import OTHER_PROJECT_KEY

    secrets = boto3.client("secretsmanager", region_name="us-east-1")
    secret_id = service.refs["MemosApiKeySecret"]
    before = secrets.get_secret_value(SecretId=secret_id)["SecretString"]
    keys = {"p1": API_KEY, "p2": OTHER_PROJECT_KEY}
    backends = [
        {"id": backend, "base_url": service.memos.base_url, "api_key": keys[backend], "max_kbs": cap}
        for backend, cap in caps.items()
    ]
    secrets.put_secret_value(SecretId=secret_id, SecretString=json.dumps(backends))
    _reset_caches()
    try:
        yield service
    finally:
        secrets.put_secret_value(SecretId=secret_id, SecretString=before)
        _reset_caches()


@pytest.fixture
def two_memos_backends(service: Service) -> Iterator[Service]:
    """Two MemOS backends; p2 has the more room, so the first KB goes there (the other project's key),
    the next to p1, and so on."""
    with memos_backends(service, {"p1": 50, "p2": 60}):
        yield service
