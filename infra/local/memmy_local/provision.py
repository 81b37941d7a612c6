"""Create the local AWS resources (on moto) that ``template.yaml`` declares.

Provisioning reads the resources' Properties from the template itself, so the local table has exactly
the deployed key schema and indexes. Each resource type has one small provisioner in ``_PROVISIONERS``;
types that only matter on AWS are listed in ``SKIPPED_RESOURCE_TYPES``; any other type stops
provisioning, so a resource added to the template is never silently missing locally.

Functions are not created (their handlers run in-process), but they get refs: ``!Ref`` is the function's
name and ``!GetAtt X.Arn`` its ARN, so a state machine's ``DefinitionSubstitutions`` and environment
variables that name a function resolve. State machines are created in moto's Step Functions from their
ASL file (``memmy_local.stepfunctions``), with Retry delays capped locally.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import boto3

from .stepfunctions import LOCAL_MAX_RETRY_DELAY_SECONDS, cap_retry_delays, load_definition
from .template import parameter_defaults, referenced_logical_ids, resolve_intrinsics, template_path

__all__ = [
    "LOCAL_ACCOUNT_ID",
    "SKIPPED_RESOURCE_TYPES",
    "LocalResources",
    "ProvisionContext",
    "provision",
]

LOCAL_ACCOUNT_ID: Final = "123456789012"  # moto's default account

SKIPPED_RESOURCE_TYPES: Final = frozenset(
    {
        # Code and its packaging: handlers run in-process, imported from functions/ and the core package
        # (AWS::Serverless::Function only gets refs, see _function_refs).
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
    _clients: dict[str, Any] = field(default_factory=dict, repr=False)

    def client(self, service: str) -> Any:
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


# ----------------------------------------------------------------------------------------- DynamoDB

# CloudFormation-only table properties with no local effect.
_TABLE_IGNORED: Final = frozenset(
    {
        "ContributorInsightsSpecification",
        "KinesisStreamSpecification",
        "ResourcePolicy",
        "ImportSourceSpecification",
        "WarmThroughput",
        "OnDemandThroughput",
    }
)
_TABLE_CREATE_AS_IS: Final = (
    "KeySchema",
    "AttributeDefinitions",
    "BillingMode",
    "LocalSecondaryIndexes",
    "ProvisionedThroughput",
    "TableClass",
    "DeletionProtectionEnabled",
    "Tags",
)
_TABLE_HANDLED: Final = frozenset(
    {
        *_TABLE_CREATE_AS_IS,
        "TableName",
        "GlobalSecondaryIndexes",
        "SSESpecification",
        "StreamSpecification",
        "TimeToLiveSpecification",
        "PointInTimeRecoverySpecification",
    }
)
_INDEX_KEYS: Final = ("IndexName", "KeySchema", "Projection", "ProvisionedThroughput")


def _provision_table(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
    unknown = set(properties) - _TABLE_HANDLED - _TABLE_IGNORED
    if unknown:
        raise NotImplementedError(
            f"{logical_id}: table properties not provisioned locally: {sorted(unknown)}"
        )
    dynamodb = ctx.client("dynamodb")
    name = ctx.physical_name(logical_id, properties, "TableName")
    request: dict[str, Any] = {"TableName": name}
    request.update({key: properties[key] for key in _TABLE_CREATE_AS_IS if key in properties})
    if "GlobalSecondaryIndexes" in properties:
        request["GlobalSecondaryIndexes"] = [
            {key: index[key] for key in _INDEX_KEYS if key in index}
            for index in properties["GlobalSecondaryIndexes"]
        ]
    # The API spells these differently from CloudFormation.
    if "SSESpecification" in properties:
        sse = properties["SSESpecification"]
        request["SSESpecification"] = {
            "Enabled": sse.get("SSEEnabled", False),
            **{key: sse[key] for key in ("SSEType", "KMSMasterKeyId") if key in sse},
        }
    if "StreamSpecification" in properties:
        request["StreamSpecification"] = {"StreamEnabled": True, **properties["StreamSpecification"]}
    table = dynamodb.create_table(**request)["TableDescription"]

    if "TimeToLiveSpecification" in properties:
        dynamodb.update_time_to_live(
            TableName=name, TimeToLiveSpecification=properties["TimeToLiveSpecification"]
        )
    if "PointInTimeRecoverySpecification" in properties:
        dynamodb.update_continuous_backups(
            TableName=name, PointInTimeRecoverySpecification=properties["PointInTimeRecoverySpecification"]
        )
    refs = {logical_id: name, f"{logical_id}.Arn": table["TableArn"]}
    if "LatestStreamArn" in table:
        refs[f"{logical_id}.StreamArn"] = table["LatestStreamArn"]
    return refs


# ------------------------------------------------------------------------------------ Secrets Manager


def _provision_secret(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    # The template only declares the secret (its value is set after deploy); locally it holds the
    # MemOS key the stack was started with, in the shape the functions read.
    request: dict[str, Any] = {
        "Name": ctx.physical_name(logical_id, properties, "Name"),
        "SecretString": json.dumps({"api_key": ctx.memos_api_key}),
    }
    for key in ("Description", "Tags"):
        if key in properties:
            request[key] = properties[key]
    arn = ctx.client("secretsmanager").create_secret(**request)["ARN"]
    return {logical_id: arn, f"{logical_id}.Id": arn}


# ---------------------------------------------------------------------------------------------- SQS

_QUEUE_ATTRIBUTES: Final = (
    "VisibilityTimeout",
    "MessageRetentionPeriod",
    "DelaySeconds",
    "MaximumMessageSize",
    "ReceiveMessageWaitTimeSeconds",
    "SqsManagedSseEnabled",
    "FifoQueue",
    "ContentBasedDeduplication",
    "RedrivePolicy",
)
_QUEUE_IGNORED: Final = frozenset({"Tags", "KmsMasterKeyId", "KmsDataKeyReusePeriodSeconds"})


def _provision_queue(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
    unknown = set(properties) - set(_QUEUE_ATTRIBUTES) - _QUEUE_IGNORED - {"QueueName"}
    if unknown:
        raise NotImplementedError(
            f"{logical_id}: queue properties not provisioned locally: {sorted(unknown)}"
        )
    sqs = ctx.client("sqs")
    name = ctx.physical_name(logical_id, properties, "QueueName")
    # The API takes every attribute as a string, the redrive policy as JSON.
    attributes = {
        key: json.dumps(value) if isinstance(value, Mapping) else _attribute_string(value)
        for key, value in properties.items()
        if key in _QUEUE_ATTRIBUTES
    }
    url = sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
    return {
        logical_id: url,
        f"{logical_id}.Arn": arn,
        f"{logical_id}.QueueName": name,
        f"{logical_id}.QueueUrl": url,
    }


def _attribute_string(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


# ----------------------------------------------------------------------------------------------- S3

# moto never runs lifecycle rules and does not need the rest to behave like the deployed bucket.
_BUCKET_IGNORED: Final = frozenset(
    {"LifecycleConfiguration", "Tags", "VersioningConfiguration", "LoggingConfiguration"}
)


def _provision_bucket(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    handled = {
        "BucketName",
        "NotificationConfiguration",
        "CorsConfiguration",
        "PublicAccessBlockConfiguration",
        "BucketEncryption",
        "OwnershipControls",
    }
    unknown = set(properties) - handled - _BUCKET_IGNORED
    if unknown:
        raise NotImplementedError(
            f"{logical_id}: bucket properties not provisioned locally: {sorted(unknown)}"
        )
    s3 = ctx.client("s3")
    name = ctx.physical_name(logical_id, properties, "BucketName").lower()
    if ctx.region == "us-east-1":
        s3.create_bucket(Bucket=name)
    else:
        s3.create_bucket(Bucket=name, CreateBucketConfiguration={"LocationConstraint": ctx.region})
    if "OwnershipControls" in properties:
        s3.put_bucket_ownership_controls(Bucket=name, OwnershipControls=properties["OwnershipControls"])
    if "PublicAccessBlockConfiguration" in properties:
        s3.put_public_access_block(
            Bucket=name, PublicAccessBlockConfiguration=properties["PublicAccessBlockConfiguration"]
        )
    if "BucketEncryption" in properties:
        rules = properties["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        s3.put_bucket_encryption(
            Bucket=name,
            ServerSideEncryptionConfiguration={
                "Rules": [
                    {"ApplyServerSideEncryptionByDefault": r["ServerSideEncryptionByDefault"]} for r in rules
                ]
            },
        )
    if "CorsConfiguration" in properties:
        renamed = {"MaxAge": "MaxAgeSeconds", "ExposedHeaders": "ExposeHeaders"}
        s3.put_bucket_cors(
            Bucket=name,
            CORSConfiguration={
                "CORSRules": [
                    {renamed.get(k, k): v for k, v in rule.items()}
                    for rule in properties["CorsConfiguration"]["CorsRules"]
                ]
            },
        )
    if "NotificationConfiguration" in properties:
        s3.put_bucket_notification_configuration(
            Bucket=name,
            NotificationConfiguration=_notification_configuration(properties["NotificationConfiguration"]),
        )
    return {logical_id: name, f"{logical_id}.Arn": f"arn:aws:s3:::{name}"}


def _notification_configuration(config: Mapping[str, Any]) -> dict[str, Any]:
    """CloudFormation's spelling (one Event, Filter.S3Key.Rules) in the API's (Events, Filter.Key.FilterRules).

    Only queue targets: moto delivers S3 events to SQS, and S3 -> Lambda would need Docker.
    """
    unknown = set(config) - {"QueueConfigurations"}
    if unknown:
        raise NotImplementedError(f"notification targets not provisioned locally: {sorted(unknown)}")
    queues = []
    for entry in config["QueueConfigurations"]:
        queue: dict[str, Any] = {"QueueArn": entry["Queue"], "Events": [entry["Event"]]}
        rules = ((entry.get("Filter") or {}).get("S3Key") or {}).get("Rules")
        if rules:
            queue["Filter"] = {"Key": {"FilterRules": rules}}
        queues.append(queue)
    return {"QueueConfigurations": queues}


# ---------------------------------------------------------------------------------------- functions


def _function_refs(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
    # Nothing is created: the handler runs in-process (gateway, runners, the Step Functions dispatcher).
    name = ctx.physical_name(logical_id, properties, "FunctionName")
    arn = f"arn:aws:lambda:{ctx.region}:{ctx.refs['AWS::AccountId']}:function:{name}"
    return {logical_id: name, f"{logical_id}.Arn": arn}


# ----------------------------------------------------------------------------------- Step Functions

_STATE_MACHINE_HANDLED: Final = frozenset(
    {"Name", "Type", "Definition", "DefinitionUri", "DefinitionSubstitutions"}
)
# What SAM makes of these (an execution role from Policies, log delivery, X-Ray, tags) has no local
# effect: moto runs every execution without IAM. Events (schedules, rules, APIs that start executions)
# are not in either set: nothing would start them locally, so they stop provisioning.
_STATE_MACHINE_IGNORED: Final = frozenset(
    {"Policies", "Role", "RolePath", "PermissionsBoundary", "Logging", "Tracing", "Tags", "PropagateTags"}
)


def _provision_state_machine(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    unknown = set(properties) - _STATE_MACHINE_HANDLED - _STATE_MACHINE_IGNORED
    if unknown:
        raise NotImplementedError(
            f"{logical_id}: state machine properties not provisioned locally: {sorted(unknown)}"
        )
    definition = load_definition(properties, ctx.template_dir)
    if ctx.max_retry_delay_seconds is not None:
        definition = cap_retry_delays(definition, ctx.max_retry_delay_seconds)
    name = ctx.physical_name(logical_id, properties, "Name")
    account = ctx.refs["AWS::AccountId"]
    arn = ctx.client("stepfunctions").create_state_machine(
        name=name,
        definition=json.dumps(definition),
        # Nothing assumes it locally; SAM would create the role from Policies.
        roleArn=f"arn:aws:iam::{account}:role/{name}-role",
        type=properties.get("Type", "STANDARD"),
    )["stateMachineArn"]
    return {logical_id: arn, f"{logical_id}.Arn": arn, f"{logical_id}.Name": name}


_PROVISIONERS: Final[dict[str, Provisioner]] = {
    "AWS::DynamoDB::Table": _provision_table,
    "AWS::SecretsManager::Secret": _provision_secret,
    "AWS::SQS::Queue": _provision_queue,
    "AWS::S3::Bucket": _provision_bucket,
    "AWS::Serverless::Function": _function_refs,
    "AWS::Serverless::StateMachine": _provision_state_machine,
}

# Types whose provisioner reads only some properties: only those are resolved and followed as
# dependencies (a function's environment and policies may name resources that have no local value, such
# as log groups, or that depend on the function itself, such as a state machine invoking it).
_USED_PROPERTIES: Final[Mapping[str, frozenset[str]]] = {
    "AWS::Serverless::Function": frozenset({"FunctionName"}),
    "AWS::Serverless::StateMachine": _STATE_MACHINE_HANDLED,
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
    (``memmy_local.stepfunctions.cap_retry_delays``), ``None`` keeps them as written.
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
    ctx = ProvisionContext(
        region,
        endpoint_url,
        prefix,
        memos_api_key,
        refs,
        template_dir=template_dir or template_path().parent,
        max_retry_delay_seconds=max_retry_delay_seconds,
    )
    resources = template["Resources"]
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
