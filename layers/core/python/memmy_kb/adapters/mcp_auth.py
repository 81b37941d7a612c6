"""The authorization server's four adapters, built from the settings without any I/O
(``memmy_kb.composition.get_mcp_auth``): the store on the table, the KMS signer, the metadata fetcher
(public hosts only) and the login provider. The login client's id is ``MCP_LOGIN_CLIENT_ID``, else the SSM
parameter ``MCP_LOGIN_CLIENT_PARAMETER`` (the stack publishes the Cognito app client's id there: the
function's environment cannot name it), read through Powertools Parameters on the first sign-in."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import httpx

from memmy_kb.adapters.client_metadata import HttpClientMetadata
from memmy_kb.adapters.dynamodb.mcp_auth import DynamoAuthorizationStore
from memmy_kb.adapters.kms_signer import KmsTokenSigner
from memmy_kb.adapters.login_provider import OidcLoginProvider
from memmy_kb.domain.ports.mcp_auth import LoginRefused, McpAuthPorts

if TYPE_CHECKING:
    import boto3

    from memmy_kb.adapters.dynamodb.table import DynamoTable
    from memmy_kb.settings import Settings

HTTP_TIMEOUT_SECONDS = 3.0
PARAMETER_MAX_AGE_SECONDS = 300


def _aws_client(session: boto3.Session, service: str) -> Any:
    """A client with short timeouts and standard retries, as the composition root builds them."""
    from botocore.config import Config

    config = Config(connect_timeout=2, read_timeout=5, retries={"mode": "standard", "max_attempts": 3})
    return session.client(service, config=config)  # type: ignore[call-overload]


def login_client_id(settings: Settings, session: boto3.Session) -> str | Callable[[], str]:
    """The login client's id, or what reads it from its SSM parameter when first asked."""
    if settings.mcp_login_client_id:
        return settings.mcp_login_client_id
    name = settings.mcp_login_client_parameter

    def read() -> str:
        if not name:
            raise LoginRefused("No login client is configured for the MCP authorization server.")
        from aws_lambda_powertools.utilities.parameters import SSMProvider

        value = SSMProvider(boto3_client=_aws_client(session, "ssm")).get(
            name, max_age=PARAMETER_MAX_AGE_SECONDS
        )
        if not isinstance(value, str) or not value.strip():
            raise LoginRefused("The login client's id parameter is empty.")
        return value.strip()

    return read


def mcp_auth_ports(settings: Settings, table: DynamoTable, session: boto3.Session) -> McpAuthPorts:
    """The store, signer, metadata fetcher and login provider; nothing is fetched until used."""
    http = httpx.Client(timeout=HTTP_TIMEOUT_SECONDS, follow_redirects=False)
    return McpAuthPorts(
        store=DynamoAuthorizationStore(table),
        signer=KmsTokenSigner(settings.mcp_signing_key, _aws_client(session, "kms")),
        metadata=HttpClientMetadata(http),
        login=OidcLoginProvider(settings.login_issuer, login_client_id(settings, session), http),
    )
