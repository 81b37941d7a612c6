"""What each of the local stack's provisioners gets (``ProvisionContext``) and what it returns (refs)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import boto3

from memmy_local.aws.stepfunctions import LOCAL_MAX_RETRY_DELAY_SECONDS
from memmy_local.template import template_path

# The services the provisioners create resources in.
Service = Literal["dynamodb", "kms", "s3", "secretsmanager", "sqs", "ssm", "stepfunctions"]


@dataclass
class ProvisionContext:
    """What a provisioner gets: boto3 clients for the target endpoint and the values resolved so far."""

    region: str
    endpoint_url: str | None
    prefix: str
    memos_api_key: str
    refs: dict[str, str]
    template_dir: Path = field(default_factory=lambda: template_path().parent)
    max_retry_delay_seconds: int | None = LOCAL_MAX_RETRY_DELAY_SECONDS
    # The MemOS secret's whole value (the list of backends); None: the one key above.
    memos_secret: str | None = None
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def client(self, service: Service) -> Any:
        """A boto3 client for ``service`` on the local endpoint (one per service)."""
        if service not in self._clients:
            self._clients[service] = boto3.client(
                service, region_name=self.region, endpoint_url=self.endpoint_url
            )
        return self._clients[service]

    def physical_name(self, logical_id: str, properties: Mapping[str, Any], name_property: str) -> str:
        """The template's explicit name if it sets one, else ``<prefix>-<logical id>``."""
        return properties.get(name_property) or f"{self.prefix}-{logical_id}"


# A provisioner creates one resource from its (already resolved) Properties and returns the refs it
# adds: at least the logical id itself, plus "<Id>.<Attr>" for attributes others may need.
Provisioner = Callable[[ProvisionContext, str, Mapping[str, Any]], dict[str, str]]
