"""What a SnapStart snapshot holds: everything a function's first request would import and build, and no
more (``memmy_kb.api.snapstart``; docs/architecture.md, "SnapStart").

``prime_recall(app)`` (the recall handler's before-snapshot hook) imports and builds what a first
``POST /recall`` does, without a connection, a credential, a secret or a clock reading:

- the AWS side: boto3, botocore's session with the DynamoDB and Secrets Manager models and endpoint
  data, through clients built *unsigned* and thrown away (a signing client would resolve the function's
  credentials; the request's clients are built on first use from the loaded models, in a few ms), the
  table adapter and its codec, Powertools Parameters;
- the MemOS side: httpx, the TLS context every MemOS client shares (``composition.memos_tls_context``:
  the CA bundle), the client and its reply models' validators;
- the stored records' validators, and the resolver: one ``POST /recall`` resolved by ``app`` itself,
  its ports replaced by the in-memory ones below (one grant, one hit), muted (no log line, no metric), so
  that the route's body and response models, the dependency wiring, the recall and access rules, the
  search threads and the context block have all run once.

Then everything per environment is forgotten again (``composition.forget_environment_state``): the
governor's history of that one search, and any client. ``prime_api`` is the same for a function without
recall: its AWS services and one public request.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from memmy_kb import composition
from memmy_kb.domain.engine import EngineBackend, SearchHit
from memmy_kb.observability import muted

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler import APIGatewayHttpResolver

    from memmy_kb.domain.fingerprints.store import FilePrints
    from memmy_kb.domain.ports.team_shares import Reach
    from memmy_kb.records import FileRecord, FolderRecord, GrantRecord, KnowledgeBaseRecord, ProfileRecord

# No clock reading goes into the snapshot: the primed records carry this fixed date.
_FIXED_TIME = datetime(2000, 1, 1, tzinfo=UTC)
_CALLER = "snapstart-priming"
_BACKEND = "snapstart-priming"
_PRIMED_TEXT = "A primed excerpt, whose file recall names from its text."
# How long priming waits for the primed recall's search threads to end (they end at once).
_THREADS_SECONDS = 2.0


class _Context:
    """The little of a Lambda context the resolver reads."""

    function_name = "snapstart-priming"
    memory_limit_in_mb = 128
    aws_request_id = "snapstart-priming"
    invoked_function_arn = "arn:aws:lambda:us-east-1:000000000000:function:snapstart-priming"

    def get_remaining_time_in_millis(self) -> int:
        return 10_000


class _Engine:
    """A MemOS backend answering every search with one hit."""

    def search_memory(self, user_id: str, query: str, kb_ids: list[str], **_: Any) -> list[SearchHit]:
        return [SearchHit("Priming", _PRIMED_TEXT, 0.5)]


class _Engines:
    def backends(self) -> list[EngineBackend]:
        return [EngineBackend(_BACKEND, max_kbs=1)]

    def engine(self, backend_id: str) -> _Engine:
        return _Engine()


class _Sources:
    """The caller's one grant (recall on) and its KB's name."""

    def __init__(self) -> None:
        from memmy_kb.records import GrantRecord, KnowledgeBaseRecord

        self._grant = GrantRecord(
            user_id=_CALLER, kb_id="kb_priming", role="owner", recall=True, memos_kb_id="memos-priming",
            memos_backend=_BACKEND, owner_id=_CALLER, granted_at=_FIXED_TIME,
        )  # fmt: skip
        self._kb = KnowledgeBaseRecord(
            kb_id="kb_priming", name="Priming", owner_id=_CALLER, memos_kb_id="memos-priming",
            memos_backend=_BACKEND, created_at=_FIXED_TIME,
        )  # fmt: skip

    def get_grant(self, user_id: str, kb_id: str) -> GrantRecord | None:
        return self._grant if kb_id == self._grant.kb_id else None

    def query_grants(self, user_id: str) -> list[GrantRecord]:
        return [self._grant]

    def read_reach(self, user_id: str, *, with_grants: bool) -> Reach:
        from memmy_kb.domain.ports.team_shares import Reach

        return Reach([self._grant] if with_grants else [])

    def batch_get_kbs_and_profiles(
        self, kb_ids: Iterable[str], user_ids: Iterable[str]
    ) -> tuple[dict[str, KnowledgeBaseRecord], dict[str, ProfileRecord]]:
        return {self._kb.kb_id: self._kb}, {}


class _Files:
    """The KB's one file, whose fingerprints hold the primed excerpt's text, at its root."""

    def query_prints(self, kb_id: str) -> list[FilePrints]:
        from memmy_kb.domain.fingerprints.prints import fingerprint
        from memmy_kb.domain.fingerprints.store import FilePrints

        return [FilePrints(kb_id, "fi_priming", 1, fingerprint([_PRIMED_TEXT]))]

    def query_folders(self, kb_id: str) -> list[FolderRecord]:
        return []

    def batch_get_files(self, keys: Iterable[tuple[str, str]]) -> dict[tuple[str, str], FileRecord]:
        from memmy_kb.records import FileRecord

        found = {}
        for kb_id, file_id in keys:
            found[(kb_id, file_id)] = FileRecord(
                kb_id=kb_id, file_id=file_id, memos_file_id="memos-priming", name="priming.md", size_bytes=1,
                upload_id="up_priming", uploaded_at=_FIXED_TIME,
            )  # fmt: skip
        return found


class _Counters:
    """The recall limit's shared window, always with room (priming counts nothing in the table)."""

    def count_in_window(self, name: str, window: int, *, cap: int, expires_at: int) -> tuple[int, int] | None:
        return 1, 0


def prime_aws(services: Iterable[str]) -> None:
    """botocore's models and endpoint data of ``services`` loaded, through unsigned clients thrown away."""
    from botocore import UNSIGNED
    from botocore.config import Config

    session = composition.aws_session()
    for service in services:
        session.client(service, config=Config(signature_version=UNSIGNED))


def prime_memos() -> None:
    """httpx, the shared TLS context, the MemOS client and its reply models, Powertools Parameters."""
    import aws_lambda_powertools.utilities.parameters  # noqa: F401 - the MemOS key is read through it

    from memmy_kb.adapters.memos.client import MemosClient
    from memmy_kb.adapters.memos.models import MemosMemory

    MemosMemory.model_rebuild()
    MemosClient("https://priming.invalid", lambda refresh: "", verify=composition.memos_tls_context()).close()


def prime_records() -> None:
    """The table adapter (and the DynamoDB codec) and the validators of the records recall reads."""
    # recall's store, its file reads and the recall limit's counters
    from memmy_kb.adapters.dynamodb import activity, knowledge_bases, recall_files
    from memmy_kb.records import FileRecord, FolderRecord, GrantRecord, KnowledgeBaseRecord, ProfileRecord

    del activity, knowledge_bases, recall_files  # imported for what they load, not used here
    for model in (GrantRecord, KnowledgeBaseRecord, ProfileRecord, FileRecord, FolderRecord):
        model.model_rebuild()


def prime_recall(app: APIGatewayHttpResolver) -> None:
    """Everything a first ``POST /recall`` imports and builds, ``app`` resolving one with in-memory ports."""
    prime_aws(("dynamodb", "secretsmanager"))
    prime_memos()
    prime_records()
    from memmy_kb.api.injected import recall_governor
    from memmy_kb.domain.recall.prints_cache import PrintsCache
    from memmy_kb.domain.recall.rate_governor import RateGovernor

    overrides = {
        composition.get_kb_store: _Sources,
        composition.get_recall_memos_client: _Engines,
        composition.get_recall_files: _Files,
        composition.get_rate_counters: _Counters,
        # A cache of its own, thrown away: the snapshot keeps no KB's fingerprints.
        composition.get_prints_cache: PrintsCache,
        # Called as the provider it replaces is (with the settings): a governor of its own, thrown away.
        recall_governor: lambda settings: RateGovernor(),
    }
    body = {"query": "priming"}
    _resolve(app, "POST", "/recall", body, overrides, expect=200)


def prime_api(app: APIGatewayHttpResolver, services: Iterable[str], path: str) -> None:
    """``services``' models, the records' validators and the resolver, through one public GET ``path``."""
    prime_aws(services)
    prime_records()
    _resolve(app, "GET", path, None, {}, expect=None)


def _resolve(
    app: APIGatewayHttpResolver,
    method: str,
    path: str,
    body: dict[str, Any] | None,
    overrides: dict[Any, Any],
    expect: int | None,
) -> None:
    """One request resolved by ``app`` with ``overrides``, muted; then only what is shareable is kept."""
    before = set(threading.enumerate())
    saved = dict(app.dependency_overrides)
    app.dependency_overrides.update(overrides)
    try:
        with muted():
            answer = app.resolve(_event(method, path, body), _Context())  # type: ignore[arg-type]
    finally:
        app.dependency_overrides.clear()
        app.dependency_overrides.update(saved)
    if expect is not None and answer.get("statusCode") != expect:
        raise RuntimeError(f"priming {method} {path} answered {answer.get('statusCode')}, not {expect}")
    _wait_for_threads(before)
    composition.forget_environment_state()


def _wait_for_threads(before: set[threading.Thread]) -> None:
    """The primed request's search threads are gone before the snapshot (none runs in a restored copy)."""
    deadline = time.monotonic() + _THREADS_SECONDS
    for thread in set(threading.enumerate()) - before:
        thread.join(max(deadline - time.monotonic(), 0))


def _event(method: str, path: str, body: dict[str, Any] | None) -> dict[str, Any]:
    """An HTTP API (payload 2.0) event for ``method path`` from the priming caller."""
    claims = {"sub": _CALLER, "iss": "snapstart-priming", "aud": "snapstart-priming"}
    return {
        "version": "2.0", "routeKey": f"{method} {path}", "rawPath": path, "rawQueryString": "",
        "headers": {"content-type": "application/json"}, "isBase64Encoded": False,
        "body": json.dumps(body) if body is not None else None,
        "requestContext": {
            "http": {"method": method, "path": path, "sourceIp": "127.0.0.1"}, "routeKey": f"{method} {path}",
            "requestId": "snapstart-priming", "stage": "$default", "authorizer": {"jwt": {"claims": claims}},
        },
    }  # fmt: skip
