"""Reads and app-only edits of knowledge bases, and the caller's profile. Never writes MemOS."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Query
from aws_lambda_powertools.logging import correlation_paths

from memmy_kb import files, knowledge_bases, profiles
from memmy_kb.dependencies import get_memos_client, get_repository
from memmy_kb.http import NOT_VISIBLE, READER, ItemId, KbId, build_resolver, json_response, responses
from memmy_kb.identity import caller_id, verified_claims
from memmy_kb.models import (
    CreateFolderRequest,
    File,
    FileListing,
    Folder,
    KnowledgeBase,
    KnowledgeBaseList,
    Me,
    MoveFileRequest,
    RecallSettingRequest,
    RenameKnowledgeBaseRequest,
    UpdateFolderRequest,
)
from memmy_kb.observability import logger, tracer

app = build_resolver()


@app.get(
    "/knowledge-bases",
    summary="List the caller's owned and shared knowledge bases",
    responses=responses(HTTPStatus.OK, "Owned and shared knowledge bases", KnowledgeBaseList),
)
def list_knowledge_bases() -> KnowledgeBaseList:
    return knowledge_bases.list_knowledge_bases(get_repository(), caller_id(app.current_event.raw_event))


@app.get(
    "/knowledge-bases/<kb_id>",
    summary="Read one knowledge base",
    responses=responses(
        HTTPStatus.OK,
        "The knowledge base as the caller sees it",
        KnowledgeBase,
        NOT_VISIBLE,
    ),
)
def get_knowledge_base(kb_id: KbId) -> KnowledgeBase:
    return knowledge_bases.get_knowledge_base(get_repository(), caller_id(app.current_event.raw_event), kb_id)


@app.patch(
    "/knowledge-bases/<kb_id>",
    summary="Rename a knowledge base (owner only)",
    responses=responses(
        HTTPStatus.OK,
        "The renamed knowledge base",
        KnowledgeBase,
        READER,
        NOT_VISIBLE,
    ),
)
def rename_knowledge_base(
    kb_id: KbId, request: Annotated[RenameKnowledgeBaseRequest, Body()]
) -> KnowledgeBase:
    caller = caller_id(app.current_event.raw_event)
    return knowledge_bases.rename_knowledge_base(get_repository(), caller, kb_id, request.name)


@app.put(
    "/knowledge-bases/<kb_id>/recall",
    summary="Turn the caller's own recall of a knowledge base on or off",
    responses=responses(
        HTTPStatus.OK,
        "The knowledge base with the caller's new setting",
        KnowledgeBase,
        NOT_VISIBLE,
    ),
)
def set_recall(kb_id: KbId, request: Annotated[RecallSettingRequest, Body()]) -> KnowledgeBase:
    caller = caller_id(app.current_event.raw_event)
    return knowledge_bases.set_recall(get_repository(), caller, kb_id, request.enabled)


@app.get(
    "/knowledge-bases/<kb_id>/files",
    summary="One level of a knowledge base: its folders and files with live status",
    responses=responses(
        HTTPStatus.OK,
        "Folders and files",
        FileListing,
        NOT_VISIBLE,
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS unavailable"),
    ),
)
def list_files(kb_id: KbId, folder_id: Annotated[str | None, Query(max_length=64)] = None) -> FileListing:
    caller = caller_id(app.current_event.raw_event)
    return files.list_files(get_repository(), get_memos_client(), caller, kb_id, folder_id)


@app.patch(
    "/knowledge-bases/<kb_id>/files/<file_id>",
    summary="Move a file to another folder (owner only)",
    responses=responses(
        HTTPStatus.OK,
        "The moved file",
        File,
        READER,
        NOT_VISIBLE,
        (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS unavailable"),
    ),
)
def move_file(kb_id: KbId, file_id: ItemId, request: Annotated[MoveFileRequest, Body()]) -> File:
    caller = caller_id(app.current_event.raw_event)
    return files.move_file(get_repository(), get_memos_client(), caller, kb_id, file_id, request.folder_id)


@app.post(
    "/knowledge-bases/<kb_id>/folders",
    summary="Create a folder (owner only)",
    responses=responses(HTTPStatus.CREATED, "The new folder", Folder, READER, NOT_VISIBLE),
)
def create_folder(kb_id: KbId, request: Annotated[CreateFolderRequest, Body()]):
    caller = caller_id(app.current_event.raw_event)
    folder = files.create_folder(get_repository(), caller, kb_id, request.name, request.parent_id)
    return json_response(HTTPStatus.CREATED, folder)


@app.patch(
    "/knowledge-bases/<kb_id>/folders/<folder_id>",
    summary="Rename or move a folder (owner only)",
    responses=responses(
        HTTPStatus.OK,
        "The folder",
        Folder,
        READER,
        NOT_VISIBLE,
        (HTTPStatus.CONFLICT, "The move would put the folder inside itself"),
    ),
)
def update_folder(kb_id: KbId, folder_id: ItemId, request: Annotated[UpdateFolderRequest, Body()]) -> Folder:
    caller = caller_id(app.current_event.raw_event)
    return files.update_folder(
        get_repository(),
        caller,
        kb_id,
        folder_id,
        name=request.name,
        parent_id=request.parent_id,
        move="parent_id" in request.model_fields_set,
    )


@app.put(
    "/me",
    summary="Register the caller's profile from verified token claims",
    responses=responses(
        HTTPStatus.OK, "The caller's profile", Me, (HTTPStatus.CONFLICT, "The profile changed concurrently")
    ),
)
def put_me() -> Me:
    return profiles.register_profile(get_repository(), verified_claims(app.current_event.raw_event))


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
@tracer.capture_lambda_handler
def lambda_handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)
