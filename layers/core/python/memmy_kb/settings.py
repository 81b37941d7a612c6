"""Configuration from the function's environment, read once per container and never at import time."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Settings:
    table_name: str
    memos_base_url: str
    memos_api_key_secret: str
    memos_timeout_seconds: float = 10.0
    idempotency_ttl_seconds: int = 24 * 3600


@cache
def get_settings() -> Settings:
    """The settings of this container; tests call ``get_settings.cache_clear()`` after changing env."""
    env = os.environ
    return Settings(
        table_name=env["TABLE_NAME"],
        memos_base_url=env.get("MEMOS_BASE_URL", "https://memos.memtensor.cn/api/openmem/v1"),
        memos_api_key_secret=env.get("MEMOS_API_KEY_SECRET", ""),
        memos_timeout_seconds=float(env.get("MEMOS_TIMEOUT_SECONDS", "10")),
    )
