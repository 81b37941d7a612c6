"""Configuration from the function's environment, read once per container and never at import time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache


@dataclass(frozen=True)
class Settings:
    table_name: str
    memos_base_url: str
    memos_api_key_secret: str
    memos_timeout_seconds: float = 10.0
    # KBs placed on the one backend of a single-key MemOS secret (a list of backends says per backend).
    memos_max_kbs: int = 100
    idempotency_ttl_seconds: int = 24 * 3600
    # Recall (every agent turn): how long to wait for MemOS before failing closed, and the context cap.
    recall_memos_timeout_seconds: float = 2.5
    recall_context_max_chars: int = 8000
    # Attribution (docs/architecture.md, "Recall"): "by_file" searches each MemOS backend of the scope once
    # and names every excerpt's file (so its KB) from its text; "per_kb" searches each KB of the scope on its
    # own, at most ``recall_max_searches`` MemOS searches per recall (the KBs past that are searched as one
    # group); both keep at most ``recall_max_per_kb`` excerpts from one KB. "combined" searches the whole
    # scope at once and names no KB nor file.
    recall_attribution: str = "by_file"
    recall_max_searches: int = 4
    recall_max_per_kb: int = 5
    # The MemOS rate governor (memmy_kb.domain.recall.rate_governor): near a backend's max_qps, recall sends it
    # fewer searches. False ("off") only to measure what it prevents.
    recall_rate_governor: bool = True
    # Each backend's max_qps for the whole fleet (memmy_kb.domain.recall.fleet_budget): a shared token bucket item
    # per backend in the table. False ("off"): each environment keeps to its own bucket only.
    recall_fleet_budget: bool = True
    # The per-user recall limit (memmy_kb.domain.recall.user_limit): a burst and a sustained rate per Lambda
    # environment, and a shared window of recall_burst + rate * window recalls in any window_seconds.
    recall_burst: int = 10
    recall_rate_per_second: float = 2.0
    recall_limit_window_seconds: int = 10
    # Uploads and ingest: the bucket, how long presigned URLs live, and the inline (data URL) cutoff.
    upload_bucket: str = ""
    upload_post_ttl_seconds: int = 600
    upload_get_ttl_seconds: int = 900
    inline_upload_max_bytes: int = 5 * 1024 * 1024
    # The upload queue's maxReceiveCount: the delivery that must decide rather than wait again.
    ingest_max_receives: int = 5
    # Deletion and repair: the cleanup state machine, and the queue the reconciler hands uploads back to.
    cleanup_state_machine_arn: str = ""
    upload_queue_url: str = ""
    # Abuse limits of sharing (SECURITY.md): identifier lookups per owner in a sliding window, and new
    # members per owner per UTC day.
    share_attempt_limit: int = 100
    share_attempt_window_seconds: int = 3600
    new_members_per_day: int = 100
    # How long a KB's activity log keeps an entry (DynamoDB TTL).
    activity_retention_days: int = 180
    # Capacity: KBs one user may own (the MemOS plan caps the whole account: 10, 30 or 100).
    max_kbs_per_user: int = 100
    # Capacity of one KB: files recorded in it, and their bytes (2 GiB).
    max_files_per_kb: int = 1000
    max_bytes_per_kb: int = 2 * 1024**3
    # Teams (docs/teams.md, "Limits"): members plus open invitations per team, teams per user, and
    # invitations one person sends per hour.
    team_max_members: int = 1000
    team_max_per_user: int = 100
    team_invites_per_hour: int = 100
    # Teams (docs/teams.md, "Limits"): KBs shared with one team, teams one KB is shared with.
    team_max_kbs: int = 50
    kb_max_teams: int = 20
    # Login (public, GET /login-configuration): the OpenID Connect issuer, the desktop's client id, the
    # audience the authorizer requires, the scopes the desktop asks for and which of its tokens it sends
    # ("access_token" or "id_token": the one that carries that audience and the verified profile claims).
    login_issuer: str = ""
    login_client_id: str = ""
    login_audience: str = ""
    login_scopes: tuple[str, ...] = ()
    login_bearer_token: str = "access_token"  # noqa: S105 - the name of a token kind, not a secret
    # The remote MCP endpoint (docs/architecture.md, "The remote MCP endpoint"): the issuer of its access
    # tokens and their JWKS, the authorization server it advertises, its own URL (empty: from the request's
    # domain), the scope it requires and the browser origins it accepts (none listed: only requests
    # without an Origin).
    mcp_token_issuer: str = ""
    mcp_jwks_url: str = ""
    mcp_authorization_server: str = ""
    mcp_resource_url: str = ""
    mcp_scope: str = "kb.search"
    mcp_allowed_origins: frozenset[str] = frozenset()
    # The service's own authorization server for MCP clients (docs/remote-mcp.md): the KMS key that signs
    # its access tokens (the mcp function reads its public half when MCP_JWKS_URL is empty), its issuer
    # (empty: https://<the API's domain>), and the client it signs people in with at the login provider
    # (given, or read from the SSM parameter named).
    mcp_signing_key: str = ""
    mcp_auth_issuer: str = ""
    mcp_login_client_id: str = ""
    mcp_login_client_parameter: str = ""


@cache
def get_settings() -> Settings:
    """The settings of this container; ``memmy_kb.composition.reset_composition()`` forgets them (tests)."""
    env = os.environ
    return Settings(
        table_name=env["TABLE_NAME"],
        memos_base_url=env.get("MEMOS_BASE_URL", "https://memos.memtensor.cn/api/openmem/v1"),
        memos_api_key_secret=env.get("MEMOS_API_KEY_SECRET", ""),
        memos_timeout_seconds=float(env.get("MEMOS_TIMEOUT_SECONDS", "10")),
        memos_max_kbs=int(env.get("MEMOS_MAX_KBS", "100")),
        recall_memos_timeout_seconds=_positive(env, "RECALL_MEMOS_TIMEOUT_SECONDS", 2.5),
        recall_context_max_chars=int(_positive(env, "RECALL_CONTEXT_MAX_CHARS", 8000)),
        recall_attribution=_choice(env, "RECALL_ATTRIBUTION", ("by_file", "per_kb", "combined")),
        recall_max_searches=int(_positive(env, "RECALL_MAX_SEARCHES", 4)),
        recall_max_per_kb=int(_positive(env, "RECALL_MAX_PER_KB", 5)),
        recall_rate_governor=_choice(env, "RECALL_RATE_GOVERNOR", ("on", "off")) == "on",
        recall_fleet_budget=_choice(env, "RECALL_FLEET_BUDGET", ("on", "off")) == "on",
        recall_burst=int(_positive(env, "RECALL_BURST", 10)),
        recall_rate_per_second=_positive(env, "RECALL_RATE_PER_SECOND", 2.0),
        recall_limit_window_seconds=int(_positive(env, "RECALL_LIMIT_WINDOW_SECONDS", 10)),
        upload_bucket=env.get("BUCKET_NAME", ""),
        upload_post_ttl_seconds=int(_positive(env, "UPLOAD_POST_TTL_SECONDS", 600)),
        upload_get_ttl_seconds=int(_positive(env, "UPLOAD_GET_TTL_SECONDS", 900)),
        inline_upload_max_bytes=int(_positive(env, "INLINE_UPLOAD_MAX_BYTES", 5 * 1024 * 1024)),
        ingest_max_receives=int(_positive(env, "INGEST_MAX_RECEIVES", 5)),
        cleanup_state_machine_arn=env.get("CLEANUP_STATE_MACHINE_ARN", ""),
        upload_queue_url=env.get("UPLOAD_QUEUE_URL", ""),
        share_attempt_limit=int(_positive(env, "SHARE_ATTEMPT_LIMIT", 100)),
        share_attempt_window_seconds=int(_positive(env, "SHARE_ATTEMPT_WINDOW_SECONDS", 3600)),
        new_members_per_day=int(_positive(env, "NEW_MEMBERS_PER_DAY", 100)),
        activity_retention_days=int(_positive(env, "ACTIVITY_RETENTION_DAYS", 180)),
        max_kbs_per_user=int(_positive(env, "MAX_KBS_PER_USER", 100)),
        max_files_per_kb=int(_positive(env, "MAX_FILES_PER_KB", 1000)),
        max_bytes_per_kb=int(_positive(env, "MAX_BYTES_PER_KB", 2 * 1024**3)),
        team_max_members=int(_positive(env, "TEAM_MAX_MEMBERS", 1000)),
        team_max_per_user=int(_positive(env, "TEAM_MAX_PER_USER", 100)),
        team_invites_per_hour=int(_positive(env, "TEAM_INVITES_PER_HOUR", 100)),
        team_max_kbs=int(_positive(env, "TEAM_MAX_KBS", 50)),
        kb_max_teams=int(_positive(env, "KB_MAX_TEAMS", 20)),
        login_issuer=env.get("LOGIN_ISSUER", ""),
        login_client_id=env.get("LOGIN_CLIENT_ID", ""),
        login_audience=env.get("LOGIN_AUDIENCE", ""),
        login_scopes=tuple(env.get("LOGIN_SCOPES", "").split()),
        login_bearer_token=env.get("LOGIN_BEARER_TOKEN", "").strip() or "access_token",
        mcp_token_issuer=env.get("MCP_TOKEN_ISSUER", "").strip(),
        mcp_jwks_url=env.get("MCP_JWKS_URL", "").strip(),
        mcp_authorization_server=env.get("MCP_AUTHORIZATION_SERVER", "").strip(),
        mcp_resource_url=env.get("MCP_RESOURCE_URL", "").strip(),
        mcp_scope=env.get("MCP_SCOPE", "").strip() or "kb.search",
        mcp_allowed_origins=frozenset(o.strip() for o in env.get("MCP_ALLOWED_ORIGINS", "").split(",") if o.strip()),
        mcp_signing_key=env.get("MCP_SIGNING_KEY", "").strip(),
        mcp_auth_issuer=env.get("MCP_AUTH_ISSUER", "").strip().rstrip("/"),
        mcp_login_client_id=env.get("MCP_LOGIN_CLIENT_ID", "").strip(),
        mcp_login_client_parameter=env.get("MCP_LOGIN_CLIENT_PARAMETER", "").strip(),
    )


def _positive(env: Mapping[str, str], name: str, default: float) -> float:
    """A positive number from ``name``; a bad value fails the first request loudly, not silently."""
    raw = env.get(name)
    if raw is None or not raw.strip():
        return default
    value = float(raw)
    if not value > 0:
        raise ValueError(f"{name} must be a positive number, not {raw!r}")
    return value


def _choice(env: Mapping[str, str], name: str, choices: tuple[str, ...]) -> str:
    """One of ``choices`` from ``name`` (the first when unset); another value fails loudly."""
    raw = (env.get(name) or "").strip().lower()
    if not raw:
        return choices[0]
    if raw not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, not {raw!r}")
    return raw
