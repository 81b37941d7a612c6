"""How a local stack is set up (``StackConfig``), and the error a start that cannot happen raises."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .memos_emulator.config import DEFAULT_API_KEY

MCP_AUTHORIZATION_SERVERS = ("dev", "service")


@dataclass
class StackConfig:
    """Ports (0 = any free port), where state is kept, and how the emulator behaves."""

    gateway_port: int = 8080
    memos_port: int = 8090
    moto_port: int = 5000
    host: str = "127.0.0.1"
    data_dir: Path | None = None
    memos_processing_delay: float = 1.0
    memos_api_key: str = DEFAULT_API_KEY
    # MemOS projects the emulator holds, each with its own key (``<memos_api_key>-p<n>``) and KB quota,
    # and the stack's backends in its MemOS secret (docs/memos.md, "Backends"); 1: one key, as deployed.
    memos_projects: int = 1
    memos_kb_quota: int | None = None
    # MemOS's rate limit, enforced by the emulator on each project's searches and written to the secret as
    # each backend's max_qps (docs/memos.md, "Rate"); None: no limit, as before.
    memos_search_qps: float | None = None
    # The emulator's rewrite mode: search hits' text comes back rewritten (docs/memos.md, "Rewrite mode").
    memos_rewrite: bool = False
    # The emulator's file-id mode: search hits name their file (docs/memos.md, "A hit's file").
    memos_file_ids: bool = False
    template_path: Path | None = None
    repo_root: Path | None = None
    region: str = "us-east-1"
    issuer: str | None = None
    audience: str | None = None
    # Seconds between two runs of each scheduled function (the template's rates are minutes); 0: never,
    # only on demand (run_scheduled, memmy-local reconcile).
    schedule_interval: float = 60.0
    # The control endpoint (memmy_local.control) on `host`; 0 = any free port, recorded in the dev home.
    control_port: int = 0
    # The dev identity provider (memmy_local.identity.provider): its URL is the issuer unless `issuer` is set.
    idp_port: int = 8070
    # The authorization server of MCP clients (docs/remote-mcp.md): "dev", the dev identity provider (its
    # issuer and JWKS passed as McpTokenIssuer and McpJwksUrl); "service", the service's own (the mcp_auth
    # function, as deployed: McpTokenIssuer empty, its issuer the gateway's URL), which signs people in with
    # the dev identity provider as its login provider.
    mcp_authorization: Literal["dev", "service"] = "dev"
    access_token_ttl: int = 3600
    # State machine Lambda tasks: function name or logical id -> a callable used instead of the handler.
    task_overrides: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.mcp_authorization not in MCP_AUTHORIZATION_SERVERS:
            raise ValueError(
                f"mcp_authorization is {self.mcp_authorization!r}; it must be one of {', '.join(MCP_AUTHORIZATION_SERVERS)}."
            )


class StackStartError(RuntimeError):
    """The stack cannot start as configured (a port in use); the message says what to change, and
    ``option`` names the option that chooses the port in the way (``--port``), with that ``port``."""

    def __init__(self, message: str, option: str = "", port: int = 0) -> None:
        super().__init__(message)
        self.option, self.port = option, port
