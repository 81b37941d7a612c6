"""A knowledge base's files and folders: one level with live status, moving files, folder edits."""

from __future__ import annotations

from http import HTTPStatus
from typing import Annotated

from aws_lambda_powertools.event_handler import Response
from aws_lambda_powertools.event_handler.openapi.params import Body, Query

from memmy_kb.api.injected import CallerId, ContentStoreDep, KbStoreDep, MemosDep
from memmy_kb.api.models.files import (
    CreateFolderRequest,
    File,
    FileListing,
    Folder,
    MoveFileRequest,
    UpdateFolderRequest,
)
from memmy_kb.api.resolver import NOT_VISIBLE, READER, ItemId, KbId, json_response, new_router, responses
from memmy_kb.domain.knowledge_bases import files, folders

router = new_router()
_MEMOS_DOWN = (HTTPStatus.SERVICE_UNAVAILABLE, "MemOS unavailable")
_FILE_NAME_TAKEN = (
    HTTPStatus.CONFLICT,
    "A file of the destination folder has the same name once trimmed and NFC-normalised (`name_taken`, the"
    " file's `kind`, `id` and `name` in `details`)",
)
_FOLDER_NAME_TAKEN = (
    HTTPStatus.CONFLICT,
    "A sibling folder has the same name once trimmed and NFC-normalised (`name_taken`, its `kind`, `id` and"
    " `name` in `details`)",
)


@router.get(
    "/knowledge-bases/<kb_id>/files",
    operation_id="listFiles",
    summary="One level of a knowledge base: its folders and files with live status",
    responses=responses(HTTPStatus.OK, "Folders and files", FileListing, NOT_VISIBLE, _MEMOS_DOWN),
)
def handle_list_files(
    kb_id: KbId,
    caller: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
    memos: MemosDep,
    folder_id: Annotated[str | None, Query(max_length=64)] = None,
) -> FileListing:
    listing = files.list_files(kbs, contents, memos, caller, kb_id, folder_id)
    return FileListing.from_listing(listing)


@router.get(
    "/knowledge-bases/<kb_id>/files/<file_id>",
    operation_id="getFile",
    summary="One file with its version, live status and replace in flight",
    responses=responses(HTTPStatus.OK, "The file", File, NOT_VISIBLE, _MEMOS_DOWN),
)
def handle_get_file(
    kb_id: KbId, file_id: ItemId, caller: CallerId, kbs: KbStoreDep, contents: ContentStoreDep, memos: MemosDep
) -> File:
    return File.from_entry(files.get_file(kbs, contents, memos, caller, kb_id, file_id))


@router.patch(
    "/knowledge-bases/<kb_id>/files/<file_id>",
    operation_id="moveFile",
    summary="Move a file to another folder (owner only)",
    responses=responses(
        HTTPStatus.OK, "The moved file", File, READER, NOT_VISIBLE, _MEMOS_DOWN, _FILE_NAME_TAKEN
    ),
)
def handle_move_file(
    kb_id: KbId,
    file_id: ItemId,
    request: Annotated[MoveFileRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
    memos: MemosDep,
) -> File:
    entry = files.move_file(kbs, contents, memos, caller, kb_id, file_id, request.folder_id)
    return File.from_entry(entry)


@router.post(
    "/knowledge-bases/<kb_id>/folders",
    operation_id="createFolder",
    summary="Create a folder (owner only)",
    responses=responses(HTTPStatus.CREATED, "The new folder", Folder, READER, NOT_VISIBLE, _FOLDER_NAME_TAKEN),
)
def handle_create_folder(
    kb_id: KbId,
    request: Annotated[CreateFolderRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
) -> Response[str]:
    folder = folders.create_folder(kbs, contents, caller, kb_id, request.name, request.parent_id)
    return json_response(HTTPStatus.CREATED, Folder.from_record(folder))


@router.patch(
    "/knowledge-bases/<kb_id>/folders/<folder_id>",
    operation_id="updateFolder",
    summary="Rename or move a folder (owner only)",
    responses=responses(
        HTTPStatus.OK,
        "The folder",
        Folder,
        READER,
        NOT_VISIBLE,
        (
            HTTPStatus.CONFLICT,
            "The move would put the folder inside itself (`folder_cycle`), or a sibling folder has the name"
            " once trimmed and NFC-normalised (`name_taken`, the sibling's `kind`, `id` and `name` in `details`)",
        ),
    ),
)
def handle_update_folder(
    kb_id: KbId,
    folder_id: ItemId,
    request: Annotated[UpdateFolderRequest, Body()],
    caller: CallerId,
    kbs: KbStoreDep,
    contents: ContentStoreDep,
) -> Folder:
    folder = folders.update_folder(
        kbs,
        contents,
        caller,
        kb_id,
        folder_id,
        name=request.name,
        parent_id=request.parent_id,
        move="parent_id" in request.model_fields_set,
    )
    return Folder.from_record(folder)
