"""StackConfig: which authorization server MCP clients use locally is one of the two it knows."""

from __future__ import annotations

import pytest

from memmy_local.stack_config import StackConfig


def test_the_dev_provider_is_the_default_and_the_services_own_server_a_choice() -> None:
    assert StackConfig().mcp_authorization == "dev"
    assert StackConfig(mcp_authorization="service").mcp_authorization == "service"


def test_another_authorization_server_is_refused_with_a_sentence() -> None:
    with pytest.raises(ValueError, match="must be one of dev, service"):
        StackConfig(mcp_authorization="cognito")  # type: ignore[arg-type]
