"""moto's process-wide configuration as the local stack runs it: Step Functions executing the ASL, no
Docker for Lambda, a clean slate at start, and the previous configuration put back at stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from moto.core.config import DefaultConfig

# Turns on real ASL execution in moto's Step Functions (off by default); Lambda tasks never use Docker.
MOTO_CONFIG = {"stepfunctions": {"execute_state_machine": True}, "lambda": {"use_docker": False}}


def moto_config_snapshot() -> DefaultConfig:
    import copy

    from moto.core.config import default_user_config

    return copy.deepcopy(default_user_config)


def restore_moto_config(snapshot: DefaultConfig) -> None:
    from moto.core.config import default_user_config

    # moto's config endpoint replaces whole sections and adds none: putting each back restores them all.
    default_user_config.update(snapshot)


def configure_moto(moto_url: str) -> None:
    """A clean slate with Step Functions execution on (moto's backends outlive a server in the process)."""
    import httpx

    for path, body in (("/moto-api/reset", None), ("/moto-api/config", MOTO_CONFIG)):
        httpx.post(f"{moto_url}{path}", json=body, timeout=10).raise_for_status()
