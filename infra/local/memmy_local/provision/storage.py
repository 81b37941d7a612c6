"""Provisioners for where the service keeps things: the DynamoDB table, the Secrets Manager secret and the
S3 bucket (with its notifications to SQS). Each reads the resource's Properties from the template and
refuses a property it does not provision, so the local resource matches the deployed one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .context import ProvisionContext

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


def provision_table(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
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


def memos_project_keys(api_key: str, projects: int, project: str) -> dict[str, str]:
    """The MemOS emulator's keys: ``api_key`` for one project, else ``<api_key>-p<n>`` for project ``n``."""
    if projects <= 1:
        return {api_key: project}
    return {f"{api_key}-p{n}": f"{project}-p{n}" for n in range(1, projects + 1)}


def memos_backends_secret(
    keys: dict[str, str], base_url: str, kb_quota: int | None, max_qps: float | None = None
) -> str | None:
    """The MemOS secret listing one backend (``p<n>``) per key of ``keys``, ``kb_quota`` KBs each (100 when
    unset) and ``max_qps`` (the emulator's enforced rate) when given; None for a single key without a rate,
    which the secret holds as deployed stacks do (a single key with a rate is the backend ``default``)."""
    if len(keys) <= 1 and max_qps is None:
        return None
    cap = kb_quota if kb_quota is not None else 100
    ids = ["default"] if len(keys) <= 1 else [f"p{n}" for n in range(1, len(keys) + 1)]
    rate = {} if max_qps is None else {"max_qps": max_qps}
    return json.dumps(
        [
            {"id": backend, "base_url": base_url, "api_key": key, "max_kbs": cap, **rate}
            for backend, key in zip(ids, keys, strict=True)
        ]
    )


def provision_secret(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
    # The template only declares the secret (its value is set after deploy); locally it holds the
    # MemOS key the stack was started with, in the shape the functions read.
    request: dict[str, Any] = {
        "Name": ctx.physical_name(logical_id, properties, "Name"),
        "SecretString": ctx.memos_secret or json.dumps({"api_key": ctx.memos_api_key}),
    }
    for key in ("Description", "Tags"):
        if key in properties:
            request[key] = properties[key]
    arn = ctx.client("secretsmanager").create_secret(**request)["ARN"]
    return {logical_id: arn, f"{logical_id}.Id": arn}


# ----------------------------------------------------------------------------------------------- S3

# moto never runs lifecycle rules and does not need the rest to behave like the deployed bucket.
_BUCKET_IGNORED: Final = frozenset(
    {"LifecycleConfiguration", "Tags", "VersioningConfiguration", "LoggingConfiguration"}
)


def provision_bucket(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
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
