"""The HTTP edge shared by every API function: one resolver setup, one error shape, shared path types.

Every non-2xx answer is ``{"error": {"code", "message", "details"?}}``: domain errors, validation
errors, unknown routes and unexpected failures alike.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from http import HTTPStatus
from re import Match
from typing import Annotated, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.api_gateway import ResponseBuilder, Route
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.params import Path
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from aws_lambda_powertools.shared.json_encoder import Encoder
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import BaseModel

from memmy_kb.api.models.errors import ErrorResponse, UnauthorizedResponse
from memmy_kb.api.request_guard import JSON_MEDIA_TYPE, check_json_body
from memmy_kb.errors import DomainError, RecallUnavailable, TooManyRequests
from memmy_kb.invocation_deadline import bounded_by
from memmy_kb.observability import logger

# The error statuses every route can answer, in the error shape.
COMMON_ERRORS: tuple[tuple[int, str], ...] = (
    (HTTPStatus.UNAUTHORIZED, "Missing or invalid login token"),
    (HTTPStatus.REQUEST_ENTITY_TOO_LARGE, "The request body is over 64 KB"),
    (HTTPStatus.UNSUPPORTED_MEDIA_TYPE, "The request body is not JSON"),
    (HTTPStatus.UNPROCESSABLE_ENTITY, "Invalid request: not a JSON object, or not what the route takes"),
    (HTTPStatus.INTERNAL_SERVER_ERROR, "Unexpected failure"),
    (HTTPStatus.SERVICE_UNAVAILABLE, "A storage service is busy or unreachable just now: try again shortly"),
)
# How long a caller is asked to wait after ``storage_unavailable`` (AWS throttling passes within seconds).
STORAGE_RETRY_AFTER_SECONDS = 2


# Path parameters every API function shares: ids we mint are short; user ids come from the login provider.
KbId = Annotated[str, Path(min_length=1, max_length=64)]
ItemId = Annotated[str, Path(min_length=1, max_length=64)]
UserId = Annotated[str, Path(min_length=1, max_length=256)]
TeamId = Annotated[str, Path(min_length=1, max_length=64)]

# Refusals many routes document, in the error shape.
NOT_VISIBLE = (HTTPStatus.NOT_FOUND, "No such knowledge base (or folder/file), or not visible to the caller")
READER = (HTTPStatus.FORBIDDEN, "The caller is a reader, not the owner")
NO_TEAM = (HTTPStatus.NOT_FOUND, "No such team, or the caller is not in it (`team_not_found`)")
NO_PROFILE = (HTTPStatus.NOT_FOUND, "No profile yet: register it with PUT /me")


def json_text(value: Any) -> str:
    """``value`` as the JSON of an answer's body: compact, in UTF-8 text (Chinese as itself, not ``\\u``
    escapes), as every route answers, whether it returns a model (Powertools' serializer) or builds its
    response (``json_response``: pydantic writes UTF-8 too). A lone surrogate, which UTF-8 cannot carry,
    is escaped instead."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), cls=Encoder)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(value, separators=(",", ":"), cls=Encoder)
    return text


def error_response(status: int, code: str, message: str, details: Any = None) -> Response[str]:
    error: dict[str, Any] = {"code": code, "message": message}
    if details is not None:
        error["details"] = details
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=json_text({"error": error}))


def json_response(status: int, model: BaseModel) -> Response[str]:
    return Response(
        status_code=status, content_type=content_types.APPLICATION_JSON, body=model.model_dump_json()
    )


def responses(
    status: int,
    description: str,
    model: type[BaseModel] | None,
    *errors: tuple[int, str],
    public: bool = False,
) -> dict[int, OpenAPIResponse]:
    """OpenAPI responses of a route: its success (``model`` None: no body), ``errors`` and the common errors.

    ``public``: the route has no authorizer (``Auth: {Authorizer: NONE}`` in template.yaml), so no 401.
    """

    def entry(text: str, schema: type[BaseModel] | None) -> OpenAPIResponse:
        if schema is None:
            return {"description": text}
        return {"description": text, "content": {content_types.APPLICATION_JSON: {"model": schema}}}

    documented = {int(code): entry(text, ErrorResponse) for code, text in (*COMMON_ERRORS, *errors)}
    if public:
        del documented[HTTPStatus.UNAUTHORIZED]
    else:
        documented[HTTPStatus.UNAUTHORIZED] = entry(dict(COMMON_ERRORS)[HTTPStatus.UNAUTHORIZED], UnauthorizedResponse)
    documented[int(status)] = entry(description, model)
    return dict(sorted(documented.items()))


def new_router() -> APIGatewayHttpRouter:
    """A router for one resource's routes; a function's resolver includes it (``app.include_router``)."""
    return APIGatewayHttpRouter()  # type: ignore[no-untyped-call]  # Powertools leaves __init__ unannotated


class DecodingHttpResolver(APIGatewayHttpResolver):
    """The HTTP API resolver: path parameters decoded once, bodies checked, MemOS bounded by the invocation.

    Powertools matches routes against the raw path (``rawPath``), which API Gateway passes on still
    percent-encoded, and hands the matched segments to the route as they are. A user id a client had to
    encode (``auth0|…``, a space, non-ASCII) would then never equal the stored one, and a reader could
    never be revoked. Matching happens on the encoded path, so an encoded ``/`` stays inside its segment.
    """

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        # Every MemOS call a route makes ends before Lambda would cut the invocation off.
        with bounded_by(context):
            return super().resolve(event, context)

    def _convert_matches_into_route_keys(self, match: Match[str]) -> dict[str, str]:
        return {name: unquote(value) for name, value in match.groupdict().items()}

    def _call_route(self, route: Route, route_arguments: dict[str, str]) -> ResponseBuilder[Any]:
        # Before Powertools' own validation parses the body (memmy_kb.api.request_guard says why).
        event = self.current_event
        try:
            document = check_json_body(
                event.body,
                base64_encoded=bool(event.is_base64_encoded),
                content_type=event.headers.get("content-type"),  # Powertools' headers ignore case
            )
        except DomainError as refused:
            builder = self._call_exception_handler(refused, route)
            if builder is None:
                raise
            return builder
        if document is not None:
            # Powertools' validation reads ``json_body``, a cached property: hand it the document already
            # parsed instead of parsing the body a second time.
            event.__dict__["json_body"] = document
        declared = (event.headers.get("content-type") or "").strip()
        if declared and not declared.startswith(JSON_MEDIA_TYPE):
            # The type passed the guard whatever its case, or there is no body to type; Powertools matches
            # it case-sensitively and answers any other spelling with an exception of its own (request_guard
            # says where), so it sees the one spelling it knows. The caller's event dict is left as it was;
            # a request already spelling it as Powertools does (recall's, every SDK's) is not copied.
            headers = {k: v for k, v in event.raw_event["headers"].items() if k.lower() != "content-type"}
            event._data = {**event.raw_event, "headers": {**headers, "content-type": JSON_MEDIA_TYPE}}
        return super()._call_route(route, route_arguments)


def _is_store_unavailable(err: Exception) -> bool:
    """Is ``err`` the domain's ``StoreUnavailable``? Only an adapter that was used raises it, and using one
    loaded ``memmy_kb.domain.storage``; a handler that never touched storage (recall's import) need not."""
    storage = sys.modules.get("memmy_kb.domain.storage")
    return storage is not None and isinstance(err, storage.StoreUnavailable)


def build_resolver() -> APIGatewayHttpResolver:
    """An HTTP API resolver with request validation, decoded path parameters and the service's error mapping."""
    app = DecodingHttpResolver(enable_validation=True, serializer=json_text)

    @app.exception_handler(DomainError)  # type: ignore[untyped-decorator]
    def _domain_error(err: DomainError) -> Response[str]:
        log = logger.warning if err.status >= HTTPStatus.INTERNAL_SERVER_ERROR else logger.info
        log("request refused", extra={"status": int(err.status), "error_code": err.code})
        response = error_response(err.status, err.code, err.message, err.details)
        if isinstance(err, TooManyRequests | RecallUnavailable) and err.retry_after is not None:
            response.headers["Retry-After"] = str(err.retry_after)
        return response

    @app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
    def _invalid(err: RequestValidationError) -> Response[str]:
        details = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in err.errors()
        ]
        logger.info("request invalid", extra={"status": 422, "fields": [d["loc"] for d in details]})
        return error_response(
            HTTPStatus.UNPROCESSABLE_ENTITY, "validation_error", "The request is not valid.", details
        )

    @app.not_found
    def _not_found(_: Exception) -> Response[str]:
        return error_response(HTTPStatus.NOT_FOUND, "route_not_found", "No such route.")

    @app.exception_handler(Exception)  # type: ignore[untyped-decorator]
    def _unexpected(err: Exception) -> Response[str]:
        if _is_store_unavailable(err):
            # Throttled, failing or unreachable storage, translated by the adapters: a 503 to retry, not a bug.
            where = {"service": getattr(err, "service", ""), "reason": getattr(err, "reason", "")}
            logger.warning("storage unavailable", extra={"status": 503, **where})
            response = error_response(
                HTTPStatus.SERVICE_UNAVAILABLE,
                "storage_unavailable",
                "Our storage is busy just now; try again in a moment.",
            )
            response.headers["Retry-After"] = str(STORAGE_RETRY_AFTER_SECONDS)
            return response
        logger.exception("unexpected error")
        return error_response(
            HTTPStatus.INTERNAL_SERVER_ERROR, "internal_error", "Something went wrong on our side."
        )

    return app
