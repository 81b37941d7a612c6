"""What each handler imports when Lambda loads it, before any request: only what defining it needs.

Each handler is imported as Lambda does (a fresh interpreter, its folder as LAMBDA_TASK_ROOT, ``import
app``). Clients and the libraries behind them (boto3, httpx) come with the first request that needs them
(``memmy_kb.composition``); Powertools utilities a request may need (Parameters, idempotency) on
first use too; the X-Ray SDK never. Timings are the bench's (bench/import_time.py), not a test's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]
FUNCTIONS = sorted(p.parent.name for p in (REPO_ROOT / "functions").glob("*/app.py"))
API_FUNCTIONS = {"create_kb", "delete", "manage_kb", "recall", "share", "teams", "upload"}

_REPORT = """
import json, sys
import app
print(json.dumps({"modules": sorted(sys.modules), "handler": callable(getattr(app, "lambda_handler", None))}))
"""

# Never imported by a handler module: the first request that needs one of them imports it.
ON_FIRST_USE = {
    "boto3": "AWS clients are built by memmy_kb.composition on first use",
    "botocore.session": "AWS clients are built by memmy_kb.composition on first use",
    "botocore.client": "AWS clients are built by memmy_kb.composition on first use",
    "boto3.dynamodb.types": "the DynamoDB codec comes with the table adapter",
    "httpx": "the MemOS client comes with the first MemOS call",
    "httpcore": "the MemOS client comes with the first MemOS call",
    "anyio": "the MemOS client comes with the first MemOS call",
    "memmy_kb.adapters.memos.client": "the MemOS client comes with the first MemOS call",
    "memmy_kb.adapters.memos.transport": "the MemOS client comes with the first MemOS call",
    "memmy_kb.adapters.dynamodb.table": "the table adapter comes with the first table access",
    "aws_lambda_powertools.utilities.parameters": "the MemOS key is read on the first MemOS call",
    "aws_lambda_powertools.utilities.idempotency": "idempotency is set up by the first request that uses it",
    "phonenumbers": "phone numbers are parsed by the first share or profile update",
}


@pytest.fixture(scope="module")
def imported() -> dict[str, dict[str, object]]:
    """Per function: the modules its handler module left in sys.modules, and whether it has a handler."""
    running = {}
    for name in FUNCTIONS:
        task = REPO_ROOT / "functions" / name
        environment = {
            **os.environ,
            "LAMBDA_TASK_ROOT": str(task),
            "AWS_LAMBDA_FUNCTION_NAME": f"memmy-test-{name}",
            "AWS_REGION": "us-east-1",
            "PYTHONPATH": os.pathsep.join([str(task), str(REPO_ROOT / "layers" / "core" / "python")]),
        }
        running[name] = subprocess.Popen(  # noqa: S603 - our own snippet, run by this interpreter
            [sys.executable, "-c", _REPORT], cwd=task, env=environment, stdout=subprocess.PIPE, text=True
        )
    reports = {}
    for name, process in running.items():
        out, _ = process.communicate(timeout=120)
        assert process.returncode == 0, name
        reports[name] = json.loads(out)
    return reports


def _modules(report: dict[str, object]) -> set[str]:
    modules = report["modules"]
    assert isinstance(modules, list)
    return set(modules)


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_handler_imports_no_client_and_no_utility_it_needs_only_on_first_use(
    imported: dict[str, dict[str, object]], name: str
) -> None:
    modules = _modules(imported[name])
    early = {module: why for module, why in ON_FIRST_USE.items() if module in modules}
    assert early == {}


@pytest.mark.parametrize("name", FUNCTIONS)
def test_no_handler_loads_the_x_ray_sdk(imported: dict[str, dict[str, object]], name: str) -> None:
    # Tracing: Active traces the invocation without it; it would cost more than import boto3.
    assert not {m for m in _modules(imported[name]) if m.split(".")[0] in ("aws_xray_sdk", "wrapt")}


# Never imported by an API handler: Powertools' other resolvers and event classes (memmy_kb.api.lazy_packages)
# and the secrets module, which brings hashlib and hmac for ids a few writes draw (os.urandom gives them).
API_NEVER = {
    "asyncio": "AppSync's resolver imports it; an API function uses API Gateway's (memmy_kb.api.lazy_packages)",
    "aws_lambda_powertools.event_handler.appsync": "AppSync's resolver (memmy_kb.api.lazy_packages)",
    "aws_lambda_powertools.event_handler.bedrock_agent": "Bedrock's resolver (memmy_kb.api.lazy_packages)",
    "aws_lambda_powertools.utilities.data_classes.code_pipeline_job_event": "another service's event class",
    "secrets": "ids come from os.urandom, as secrets.token_hex draws them",
}


@pytest.mark.parametrize("name", sorted(API_FUNCTIONS))
def test_an_api_handler_imports_no_other_resolver_and_no_secrets_module(
    imported: dict[str, dict[str, object]], name: str
) -> None:
    modules = _modules(imported[name])
    early = {module: why for module, why in API_NEVER.items() if module in modules}
    assert early == {}
    assert "aws_lambda_powertools.event_handler.api_gateway" in modules


def test_the_reports_see_the_handlers_themselves(imported: dict[str, dict[str, object]]) -> None:
    # A subprocess that imported nothing would pass the tests above for the wrong reason.
    assert set(imported) == set(FUNCTIONS) >= API_FUNCTIONS
    for name, report in imported.items():
        assert report["handler"] is True, name
        modules = _modules(report)
        assert "memmy_kb.observability" in modules
        assert ("memmy_kb.api.resolver" in modules) is (name in API_FUNCTIONS), name


# The recall handler runs on every agent turn (target: 1.2x ``import boto3``, bench/import_time.py): at
# import it loads its own bodies, the error shape, the recall rule and the access decision it applies,
# and none of what other routes or the storage adapters need. Its first request loads the table adapter,
# which brings the records.
RECALL_NEVER_AT_IMPORT = {
    "memmy_kb.records": "the record models come with the table adapter, on the first request",
    "memmy_kb.domain.ports": "ports are types: the domain and the factories name them under TYPE_CHECKING",
    "memmy_kb.domain.storage": "the storage errors and the bucket's types come with the table adapter",
    "memmy_kb.adapters.s3": "recall never touches the upload bucket",
    "botocore.exceptions": "recall never touches the upload bucket (and boto3 comes with the first request)",
    "memmy_kb.adapters.memos.models": "the MemOS reply models come with the MemOS client, on the first search",
    "memmy_kb.domain.knowledge_bases.files": "recall does not list files",
    "memmy_kb.domain.knowledge_bases.manage": "recall does not manage KBs",
    "memmy_kb.domain.sharing.shares": "recall does not share",
    "memmy_kb.domain.uploads.ingest": "recall does not ingest",
    "memmy_kb.domain.deletion": "recall does not delete",
    "memmy_kb.domain.reconcile": "recall does not repair",
    "memmy_kb.domain.recall.user_limit": "the per-user limit comes with its factory (memmy_kb.composition), on the first request",
    "ssl": "only the after-restore reseed uses it; the first request's clients import it with boto3",
    "hmac": "recall signs nothing at import (botocore brings it with boto3)",
}


def test_the_recall_handler_imports_no_record_model_no_s3_and_no_other_routes_rules(
    imported: dict[str, dict[str, object]],
) -> None:
    modules = _modules(imported["recall"])
    early = {module: why for module, why in RECALL_NEVER_AT_IMPORT.items() if module in modules}
    assert early == {}
    # What it does import: the rule it applies, so the assertion above is not vacuous.
    assert {
        "memmy_kb.domain.recall.turn", "memmy_kb.domain.access", "memmy_kb.domain.recall.context_block", "memmy_kb.domain.engine"
    } <= modules


# manage_kb serves the most routes (target: 1.5x ``import boto3``): listing files words a failure's reason
# (memmy_kb.domain.uploads.reasons), which names the ingest's sentences only when a failed file is listed.
MANAGE_NEVER_AT_IMPORT = {
    "memmy_kb.domain.uploads.ingest": "the ingest's reason sentences are read when a failure is first worded",
    "memmy_kb.domain.uploads.verification": "the verification's reason sentences likewise",
    "memmy_kb.domain.fingerprints.text_extraction": "manage_kb never reads a document's text",
    "memmy_kb.domain.uploads.replace_ingest": "the replacement's reason sentences likewise",
    "memmy_kb.domain.recall.turn": "manage_kb does not recall",
}


def test_the_manage_kb_handler_imports_no_ingest_no_verification_and_no_recall(
    imported: dict[str, dict[str, object]],
) -> None:
    modules = _modules(imported["manage_kb"])
    early = {module: why for module, why in MANAGE_NEVER_AT_IMPORT.items() if module in modules}
    assert early == {}
    assert {"memmy_kb.domain.uploads.reasons", "memmy_kb.domain.knowledge_bases.files", "memmy_kb.api.routes.files"} <= modules


@pytest.mark.parametrize("name", sorted(API_FUNCTIONS))
def test_an_api_handler_imports_only_the_bodies_of_its_own_routes(
    imported: dict[str, dict[str, object]], name: str
) -> None:
    # memmy_kb.api.models holds one module per route module; the resolver takes the error shape only.
    modules = _modules(imported[name])
    routes = {m.rsplit(".", 1)[1] for m in modules if m.startswith("memmy_kb.api.routes.")}
    bodies = {m.rsplit(".", 1)[1] for m in modules if m.startswith("memmy_kb.api.models.")}
    assert routes
    assert {"base", "errors"} <= bodies <= {"base", "errors"} | routes


# The remote MCP endpoint answers without a Powertools resolver or pydantic models, with its own JSON-RPC
# layer and not the MCP SDK (docs/architecture.md, "Why our own MCP layer"); the token's libraries and the
# protocol layer come with the first request that needs them.
MCP_NEVER = {
    "mcp": "the MCP SDK: ~4 s of imports, and its session manager cannot be entered twice on a warm Lambda",
    "mcp_types": "the MCP SDK's models",
    "jwt": "PyJWT is imported with the first token",
    "cryptography": "the RSA check is imported with the first token",
    "pydantic": "no model is needed to answer the metadata, a 405 or a 401",
    "memmy_kb.api.resolver": "no Powertools resolver: the request goes to the protocol layer as it came",
    "memmy_kb.api.mcp": "the protocol layer comes with the first POST /mcp",
    "memmy_kb.domain.recall.turn": "the tools' modules come with the first call",
}


def test_the_mcp_handler_imports_no_sdk_no_token_library_and_no_models(imported: dict[str, dict[str, object]]) -> None:
    modules = _modules(imported["mcp"])
    early = {module: why for module, why in MCP_NEVER.items() if module in modules}
    assert early == {}
    assert "memmy_kb.api.mcp_endpoint.endpoint" in modules
