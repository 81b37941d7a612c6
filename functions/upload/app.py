"""POST /knowledge-bases/{kb_id}/uploads: record an upload and hand out a presigned POST (owner only)."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Header
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.metrics import MetricUnit

from memmy_kb import uploads
from memmy_kb.dependencies import get_repository, get_upload_storage
from memmy_kb.http import READER, KbId, build_resolver, json_response, responses
from memmy_kb.idempotency import run_idempotently
from memmy_kb.identity import caller_id
from memmy_kb.models import CreateUploadRequest, UploadTicket
from memmy_kb.observability import logger, metrics, tracer
from memmy_kb.settings import get_settings

app = build_resolver()


@app.post(
    "/knowledge-bases/<kb_id>/uploads",
    summary="Request a presigned POST to upload one file (owner only)",
    responses=responses(
        HTTPStatus.CREATED,
        "The upload and its presigned POST: send `fields`, then the file as the form field `file`",
        UploadTicket,
        READER,
        (HTTPStatus.NOT_FOUND, "No such knowledge base or folder, or not visible to the caller"),
        (HTTPStatus.CONFLICT, "A request with this Idempotency-Key is in progress"),
        (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "The declared size is over 100 MB"),
        (HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "The extension is not pdf, docx, doc, txt, json, md or xml"),
    ),
)
def create_upload(
    kb_id: KbId,
    request: Annotated[CreateUploadRequest, Body()],
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
):
    user_id = caller_id(app.current_event.raw_event)

    def create() -> dict[str, Any]:
        ticket = uploads.request_upload(
            get_repository(),
            get_upload_storage(),
            user_id=user_id,
            kb_id=kb_id,
            request=request,
            post_ttl_seconds=get_settings().upload_post_ttl_seconds,
        )
        metrics.add_metric(name="UploadRequested", unit=MetricUnit.Count, value=1)
        return ticket.model_dump(mode="json")

    result = run_idempotently(
        "create_upload",
        key=idempotency_key,
        user_id=user_id,
        payload={"kb_id": kb_id, **request.model_dump()},
        compute=create,
        lambda_context=app.lambda_context,
        # A repeat must never hand back a POST that has expired: remember the answer only while it works.
        ttl_seconds=get_settings().upload_post_ttl_seconds,
    )
    return json_response(HTTPStatus.CREATED, UploadTicket.model_validate(result))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
@metrics.log_metrics
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
