"""Default collaborators for the handlers, built on first use and kept for the container's life.

Domain functions take these as arguments; only handlers call the factories, and tests clear them with
``reset_dependencies()`` after changing the environment.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import httpx

from memmy_kb.memos import MemosClient
from memmy_kb.memos_key import SecretApiKeyProvider
from memmy_kb.repository import Repository
from memmy_kb.settings import get_settings


@cache
def dynamodb_client() -> Any:
    import boto3
    from botocore.config import Config

    config = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})
    return boto3.client("dynamodb", config=config)


@cache
def get_repository() -> Repository:
    return Repository(get_settings().table_name, dynamodb_client())


@cache
def get_memos_client() -> MemosClient:
    settings = get_settings()
    read = settings.memos_timeout_seconds
    return MemosClient(
        settings.memos_base_url,
        SecretApiKeyProvider(settings.memos_api_key_secret),
        timeout=httpx.Timeout(connect=2.0, read=read, write=read, pool=2.0),
    )


def reset_dependencies() -> None:
    for factory in (dynamodb_client, get_repository, get_memos_client, get_settings):
        factory.cache_clear()
