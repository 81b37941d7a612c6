"""Issuing an upload: record it and hand out the presigned POST for its bytes; issuing a replace (a file's
next version) the same way; dismissing a failed one (owner only)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb.api.idempotency import run_idempotently
from memmy_kb.api.injected import (
    CallerId,
    ContentStoreDep,
    KbCapacityDep,
    KbStoreDep,
    MemosDep,
    SettingsDep,
    UploadStorageDep,
)
from memmy_kb.api.models.uploads import (
    CreateReplacementRequest,
    CreateUploadRequest,
    ReplacementTicket,
    ReplacementUnchanged,
    UploadTicket,
)
from memmy_kb.api.resolver import NOT_VISIBLE, READER, ItemId, KbId, json_response, new_router, responses
from memmy_kb.domain.uploads import issuing, replacements
from memmy_kb.observability import metrics

router = new_router()


@router.post(
    "/knowledge-bases/<kb_id>/uploads",
    operation_id="createUpload",
    summary="Request a presigned POST to upload one file (owner only)",
    responses=responses(
        HTTPStatus.CREATED,
        "The upload and its presigned POST: send `fields`, then the file as the form field `file`",
        UploadTicket,
        READER,
        (HTTPStatus.NOT_FOUND, "No such knowledge base or folder, or not visible to the caller"),
        (
            HTTPStatus.CONFLICT,
            "The knowledge base holds the most files allowed (`kb_file_limit_reached`), a file of the folder"
            " has this name once trimmed and NFC-normalised (`name_taken`, the file's `kind`, `id` and `name` in"
            " `details`), or a request with this Idempotency-Key is in progress",
        ),
        (
            HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
            "The declared size is over 100 MB (`file_too_large`), the file does not fit in the knowledge base's"
            " storage (`kb_storage_limit_reached`), or the body is over 64 KB",
        ),
        (
            HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
            "The extension is not pdf, docx, doc, txt, json, md or xml (or the body is not JSON)",
        ),
    ),
)
def handle_create_upload(
    kb_id: KbId,
    request: Annotated[CreateUploadRequest, Body()],
    user_id: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
    storage: UploadStorageDep,
    capacity: KbCapacityDep,
    settings: SettingsDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[str]:
    ttl = settings.upload_post_ttl_seconds

    def create() -> dict[str, Any]:
        issued = issuing.request_upload(
            kbs,
            contents,
            storage,
            user_id=user_id,
            kb_id=kb_id,
            filename=request.filename,
            size_bytes=request.size_bytes,
            content_type=request.content_type,
            folder_id=request.folder_id,
            sha256=request.sha256,
            origin=request.origin,
            post_ttl_seconds=ttl,
            capacity=capacity,
        )
        metrics.add_metric(name="UploadRequested", unit=MetricUnit.Count, value=1)
        return UploadTicket.from_issued(issued).model_dump(mode="json")

    result = run_idempotently(
        "create_upload",
        key=idempotency_key,
        user_id=user_id,
        payload={"kb_id": kb_id, **request.model_dump()},
        compute=create,
        lambda_context=router.lambda_context,
        # A repeat must never hand back a POST that has expired: remember the answer only while it works.
        ttl_seconds=ttl,
    )
    return json_response(HTTPStatus.CREATED, UploadTicket.model_validate(result))


_UNCHANGED: dict[int, OpenAPIResponse] = {
    HTTPStatus.OK: {
        "description": "The bytes are the current version's and MemOS did not fail it (`status` `unchanged`): nothing to send",
        "content": {"application/json": {"model": ReplacementUnchanged}},
    }
}


@router.post(
    "/knowledge-bases/<kb_id>/files/<file_id>/replacements",
    operation_id="replaceFile",
    summary="Replace a file's content in place: a presigned POST for its next version (owner only)",
    responses={
        **responses(
            HTTPStatus.CREATED,
            "The replace and its presigned POST (`status` `issued`): send `fields`, then the bytes as the form"
            " field `file`",
            ReplacementTicket,
            READER,
            (HTTPStatus.NOT_FOUND, "No such knowledge base or file, or not visible to the caller"),
            (
                HTTPStatus.CONFLICT,
                "The file is at another version than `if_version` (`version_conflict`, its version in"
                " `details.version`), is being replaced already (`replace_in_progress`), or a request with this"
                " Idempotency-Key is in progress",
            ),
            (
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                "The size is over 100 MB (`file_too_large`), the growth does not fit in the knowledge base's"
                " storage (`kb_storage_limit_reached`), or the body is over 64 KB",
            ),
        ),
        **_UNCHANGED,
    },
)
def handle_create_replacement(
    kb_id: KbId,
    file_id: ItemId,
    request: Annotated[CreateReplacementRequest, Body()],
    user_id: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
    storage: UploadStorageDep,
    capacity: KbCapacityDep,
    settings: SettingsDep,
    memos: MemosDep,
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
) -> Response[str]:
    ttl = settings.upload_post_ttl_seconds

    def create() -> dict[str, Any]:
        ask = replacements.ReplacementRequest(kb_id=kb_id, file_id=file_id, **request.model_dump())
        result = replacements.request_replacement(
            kbs, contents, storage, memos, user_id=user_id, request=ask, post_ttl_seconds=ttl, capacity=capacity
        )
        if isinstance(result, replacements.Unchanged):
            metrics.add_metric(name="ReplaceUnchanged", unit=MetricUnit.Count, value=1)
            return ReplacementUnchanged.from_unchanged(result).model_dump(mode="json")
        metrics.add_metric(name="ReplaceRequested", unit=MetricUnit.Count, value=1)
        return ReplacementTicket.from_issued(result).model_dump(mode="json")

    result = run_idempotently(
        "create_replacement",
        key=idempotency_key,
        user_id=user_id,
        payload={"kb_id": kb_id, "file_id": file_id, **request.model_dump()},
        compute=create,
        lambda_context=router.lambda_context,
        ttl_seconds=ttl,
    )
    if result["status"] == "unchanged":
        return json_response(HTTPStatus.OK, ReplacementUnchanged.model_validate(result))
    return json_response(HTTPStatus.CREATED, ReplacementTicket.model_validate(result))


@router.delete(
    "/knowledge-bases/<kb_id>/uploads/<upload_id>",
    operation_id="dismissUpload",
    summary="Dismiss a failed upload from the listing, or a replace not yet sent on (owner only; gone already"
    " is fine)",
    responses=responses(
        HTTPStatus.NO_CONTENT,
        "Dismissed, or not there (any more)",
        None,
        READER,
        NOT_VISIBLE,
        (
            HTTPStatus.CONFLICT,
            "The upload has not failed: it is still in progress (a replace: being sent to MemOS), or became a"
            " file (`upload_not_failed`)",
        ),
    ),
)
def handle_dismiss_upload(  # type: ignore[no-untyped-def]
    kb_id: KbId, upload_id: ItemId, user_id: CallerId, kbs: KbStoreDep, contents: ContentStoreDep
):
    issuing.dismiss_upload(kbs, contents, user_id=user_id, kb_id=kb_id, upload_id=upload_id)
    metrics.add_metric(name="UploadDismissed", unit=MetricUnit.Count, value=1)
    return Response(status_code=HTTPStatus.NO_CONTENT)
