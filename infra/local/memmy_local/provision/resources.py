"""Create on moto the resources ``template.yaml`` declares, each by the provisioner of its type
(``_PROVISIONERS``); a type neither provisioned nor in ``SKIPPED_RESOURCE_TYPES`` stops provisioning, so
nothing is silently missing locally (docs/architecture.md, "Local stack")."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from memmy_local.aws.stepfunctions import LOCAL_MAX_RETRY_DELAY_SECONDS
from memmy_local.template import parameter_defaults, template_path
from memmy_local.template_intrinsics import (
    condition_refs,
    is_active,
    referenced_logical_ids,
    resolve_intrinsics,
)

from .context import ProvisionContext, Provisioner
from .keys import provision_kms_alias, provision_kms_key, provision_ssm_parameter
from .storage import provision_bucket, provision_secret, provision_table
from .workflow import (
    STATE_MACHINE_PROPERTIES,
    function_refs,
    provision_queue,
    provision_state_machine,
)

__all__ = [
    "LOCAL_ACCOUNT_ID",
    "SKIPPED_RESOURCE_TYPES",
    "LocalResources",
    "provision",
]

LOCAL_ACCOUNT_ID: Final = "123456789012"  # moto's default account

SKIPPED_RESOURCE_TYPES: Final = frozenset(
    {
        # Code and its packaging: handlers run in-process, imported from functions/ and the core package
        # (AWS::Serverless::Function only gets refs, see function_refs).
        "AWS::Serverless::LayerVersion",
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::Lambda::Permission",
        # The API: the local gateway reads the routes from the functions' HttpApi events and checks tokens.
        "AWS::Serverless::HttpApi",
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::ApiGatewayV2::Authorizer",
        # Observability and permissions: nothing runs under IAM or ships logs locally.
        "AWS::Logs::LogGroup",
        "AWS::CloudWatch::Alarm",
        "AWS::IAM::Role",
        "AWS::IAM::Policy",
        "AWS::IAM::ManagedPolicy",
        # Resource policies: locally nothing is denied, and moto delivers S3 notifications without one.
        "AWS::SQS::QueuePolicy",
        "AWS::S3::BucketPolicy",
        # moto never fires schedules: the local runner calls the scheduled handler itself.
        "AWS::Events::Rule",
        "AWS::Scheduler::Schedule",
    }
)


@dataclass
class LocalResources:
    """What was provisioned: ``refs`` maps logical ids to physical values (``!Ref``), ``"<Id>.<Attr>"``
    to attributes (``!GetAtt``), parameter names to their values, and the pseudo parameters."""

    refs: dict[str, str]


_PROVISIONERS: Final[dict[str, Provisioner]] = {
    "AWS::DynamoDB::Table": provision_table,
    "AWS::SecretsManager::Secret": provision_secret,
    "AWS::SQS::Queue": provision_queue,
    "AWS::S3::Bucket": provision_bucket,
    "AWS::Serverless::Function": function_refs,
    "AWS::Serverless::StateMachine": provision_state_machine,
    "AWS::KMS::Key": provision_kms_key,
    "AWS::KMS::Alias": provision_kms_alias,
    "AWS::SSM::Parameter": provision_ssm_parameter,
}

# Types whose provisioner reads only some properties: only those are resolved and followed as
# dependencies (a function's environment and policies may name resources that have no local value, such
# as log groups, or that depend on the function itself, such as a state machine invoking it).
_USED_PROPERTIES: Final[Mapping[str, frozenset[str]]] = {
    "AWS::Serverless::Function": frozenset({"FunctionName"}),
    "AWS::Serverless::StateMachine": STATE_MACHINE_PROPERTIES,
}


def _used_properties(resource: Mapping[str, Any]) -> dict[str, Any]:
    properties = resource.get("Properties") or {}
    used = _USED_PROPERTIES.get(resource.get("Type", ""))
    return dict(properties) if used is None else {k: v for k, v in properties.items() if k in used}


def _resolved_properties(resource: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, Any]:
    """The properties a provisioner gets: the used ones resolved, the others (only checked) as written."""
    properties = dict(resource.get("Properties") or {})
    properties.update(resolve_intrinsics(_used_properties(resource), refs))
    return properties


# ------------------------------------------------------------------------------------------- driver


def provision(
    template: Mapping[str, Any],
    *,
    endpoint_url: str | None,
    region: str = "us-east-1",
    memos_api_key: str,
    memos_secret: str | None = None,
    parameters: Mapping[str, str] | None = None,
    prefix: str = "memmy-local",
    template_dir: Path | None = None,
    max_retry_delay_seconds: int | None = LOCAL_MAX_RETRY_DELAY_SECONDS,
) -> LocalResources:
    """Create every resource of ``template`` that the local stack needs, on ``endpoint_url``.

    ``endpoint_url=None`` means in-process moto: call it inside ``moto.mock_aws`` (otherwise boto3
    would talk to real AWS). Parameters are the template's defaults overridden by ``parameters``.
    Resources are created in dependency order (``Ref``/``GetAtt``/``Sub``/``DependsOn``).
    ``template_dir`` is where relative paths (a state machine's ``DefinitionUri``) start, by default the
    folder of ``template_path()``; ``max_retry_delay_seconds`` caps the state machines' Retry delays
    (``memmy_local.aws.stepfunctions.cap_retry_delays``), ``None`` keeps them as written. The MemOS secret holds
    ``memos_secret`` as it is (a list of backends) or, without it, ``{"api_key": memos_api_key}``.
    """
    declared = template.get("Parameters") or {}
    unknown = set(parameters or {}) - set(declared)
    if unknown:
        raise ValueError(f"parameters not declared in the template: {sorted(unknown)}")
    refs: dict[str, str] = {
        "AWS::Region": region,
        "AWS::AccountId": LOCAL_ACCOUNT_ID,
        "AWS::StackName": prefix,
        "AWS::Partition": "aws",
        "AWS::URLSuffix": "amazonaws.com",
        **parameter_defaults(template),
        **(parameters or {}),
    }
    refs.update(condition_refs(template, refs))
    ctx = ProvisionContext(
        region,
        endpoint_url,
        prefix,
        memos_api_key,
        refs,
        template_dir=template_dir or template_path().parent,
        max_retry_delay_seconds=max_retry_delay_seconds,
        memos_secret=memos_secret,
    )
    resources = {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if is_active(resource, refs)
    }
    for logical_id in _creation_order(resources):
        resource = resources[logical_id]
        properties = _resolved_properties(resource, refs)
        refs.update(_PROVISIONERS[resource["Type"]](ctx, logical_id, properties))
    return LocalResources(refs=dict(refs))


def _creation_order(resources: Mapping[str, Any]) -> list[str]:
    """The logical ids to provision, each after the provisioned resources it refers to."""
    wanted: list[str] = []
    for logical_id, resource in resources.items():
        kind = resource.get("Type")
        if kind in _PROVISIONERS:
            wanted.append(logical_id)
        elif kind not in SKIPPED_RESOURCE_TYPES:
            raise NotImplementedError(
                f"{logical_id}: no local provisioner for {kind}; add one to _PROVISIONERS "
                "or list the type in SKIPPED_RESOURCE_TYPES"
            )

    def dependencies(logical_id: str) -> list[str]:
        resource = resources[logical_id]
        depends_on = resource.get("DependsOn") or []
        names = referenced_logical_ids(_used_properties(resource)) | set(
            [depends_on] if isinstance(depends_on, str) else depends_on
        )
        return [name for name in wanted if name in names]

    order: list[str] = []
    visiting: set[str] = set()

    def visit(logical_id: str) -> None:
        if logical_id in order:
            return
        if logical_id in visiting:
            raise ValueError(f"circular dependency through {logical_id}")
        visiting.add(logical_id)
        for dependency in dependencies(logical_id):
            visit(dependency)
        visiting.discard(logical_id)
        order.append(logical_id)

    for logical_id in wanted:
        visit(logical_id)
    return order
