"""Deleting a knowledge base, a file or a folder: 202 with the cleanup id; the cleanup runs in the background."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.depends import Depends
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.injected import (
    CallerId,
    CleanupExecutionsDep,
    CleanupStoreDep,
    ContentStoreDep,
    KbStoreDep,
    SettingsDep,
)
from memmy_kb.api.models.deletion import CleanupAccepted
from memmy_kb.api.resolver import NOT_VISIBLE, READER, ItemId, KbId, json_response, new_router, responses
from memmy_kb.domain.deletion.delete import Deleter
from memmy_kb.observability import metrics

router = new_router()
_ACCEPTED = "Deleted in Memmy; MemOS and storage are cleaned up in the background"


def deleter(
    kbs: KbStoreDep,
    contents: ContentStoreDep,
    cleanups: CleanupStoreDep,
    executions: CleanupExecutionsDep,
    settings: SettingsDep,
) -> Deleter:
    """The ``Depends`` provider of the deletion rules, on the stores it receives in turn."""
    return Deleter(kbs, contents, cleanups, executions, retention_days=settings.activity_retention_days)


DeleterDep = Annotated[Deleter, Depends(deleter)]


def _accepted(cleanup_id: str, what: str) -> Response[str]:
    metrics.add_metric(name=f"{what}Deleted", unit=MetricUnit.Count, value=1)
    return json_response(HTTPStatus.ACCEPTED, CleanupAccepted(cleanup_id=cleanup_id))


@router.delete(
    "/knowledge-bases/<kb_id>",
    operation_id="deleteKnowledgeBase",
    summary="Delete a knowledge base for everyone it is shared with (owner only)",
    responses=responses(
        HTTPStatus.ACCEPTED,
        _ACCEPTED,
        CleanupAccepted,
        READER,
        NOT_VISIBLE,
        (HTTPStatus.CONFLICT, "Members kept changing while the knowledge base was being deleted; try again"),
    ),
)
def handle_delete_knowledge_base(kb_id: KbId, caller: CallerId, rules: DeleterDep) -> Response[str]:
    return _accepted(rules.delete_knowledge_base(caller, kb_id), "KnowledgeBase")


@router.delete(
    "/knowledge-bases/<kb_id>/files/<file_id>",
    operation_id="deleteFile",
    summary="Delete a file (owner only)",
    responses=responses(
        HTTPStatus.ACCEPTED,
        _ACCEPTED,
        CleanupAccepted,
        READER,
        NOT_VISIBLE,
        (HTTPStatus.CONFLICT, "The file kept moving to its next version while it was being deleted; try again (`file_busy`)"),
    ),
)
def handle_delete_file(kb_id: KbId, file_id: ItemId, caller: CallerId, rules: DeleterDep) -> Response[str]:
    return _accepted(rules.delete_file(caller, kb_id, file_id), "File")


@router.delete(
    "/knowledge-bases/<kb_id>/folders/<folder_id>",
    operation_id="deleteFolder",
    summary="Delete a folder with its subfolders and files (owner only)",
    responses=responses(HTTPStatus.ACCEPTED, _ACCEPTED, CleanupAccepted, READER, NOT_VISIBLE),
)
def handle_delete_folder(kb_id: KbId, folder_id: ItemId, caller: CallerId, rules: DeleterDep) -> Response[str]:
    return _accepted(rules.delete_folder(caller, kb_id, folder_id), "Folder")
