"""Checks that each function's template policy allows every AWS call its handler really made.

moto does not enforce IAM, so without this a missing permission would only show on AWS. Calls are
recorded at botocore's ``_make_api_call`` while a handler runs and compared with the function's
``Policies`` statements in template.yaml.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock
from urllib.parse import unquote

from botocore.client import BaseClient

_TRANSACT_ACTIONS = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_SERVICE_PREFIX = {
    "dynamodb": "dynamodb",
    "secretsmanager": "secretsmanager",
    "s3": "s3",
    "sqs": "sqs",
    "stepfunctions": "states",
}


@dataclass(frozen=True)
class Need:
    """An IAM action on a resource, named as the template names it: logical id plus an optional suffix."""

    action: str
    resource: str


def needs_of(service: str, operation: str, params: dict[str, Any], table_ids: dict[str, str]) -> list[Need]:
    """The permissions one API call needs, resources mapped back to logical ids via ``table_ids``."""
    prefix = _SERVICE_PREFIX.get(service, service)
    if service == "dynamodb":
        if operation == "TransactWriteItems":
            return [
                Need(f"dynamodb:{_TRANSACT_ACTIONS[kind]}", table_ids[body["TableName"]])
                for item in params["TransactItems"]
                for kind, body in item.items()
            ]
        if operation in ("BatchGetItem", "BatchWriteItem"):
            return [Need(f"dynamodb:{operation}", table_ids[name]) for name in params["RequestItems"]]
        resource = table_ids[params["TableName"]]
        if "IndexName" in params:
            resource += f"/index/{params['IndexName']}"
        return [Need(f"dynamodb:{operation}", resource)]
    if service == "secretsmanager":
        return [Need(f"secretsmanager:{operation}", table_ids.get(params.get("SecretId", ""), "?"))]
    if service == "s3":
        return _s3_needs(operation, params, table_ids)
    if service == "stepfunctions" and "stateMachineArn" in params:
        return [Need(f"states:{operation}", table_ids.get(params["stateMachineArn"], "?"))]
    if service == "kms" and "KeyId" in params:
        # A key named by its ARN or its id, either way the template's key (its Ref is the id).
        key = str(params["KeyId"])
        return [Need(f"kms:{operation}", table_ids.get(key) or table_ids.get(key.rsplit("/", 1)[-1], "?"))]
    if service == "sqs" and "QueueUrl" in params:
        return [Need(f"sqs:{operation}", table_ids.get(params["QueueUrl"], "?"))]
    return [Need(f"{prefix}:{operation}", "*")]


# S3 operations are authorized by actions of other names (HeadObject needs s3:GetObject, ...).
_S3_OBJECT_ACTIONS = {
    "HeadObject": "s3:GetObject",
    "GetObject": "s3:GetObject",
    "PutObject": "s3:PutObject",
    "DeleteObject": "s3:DeleteObject",
}
_S3_BUCKET_ACTIONS = {"ListObjectsV2": "s3:ListBucket", "ListObjects": "s3:ListBucket"}


def _s3_needs(operation: str, params: dict[str, Any], bucket_ids: dict[str, str]) -> list[Need]:
    """S3 needs as ``<bucket logical id>/<key>`` (object actions) or ``<bucket logical id>`` (bucket)."""
    bucket = bucket_ids.get(params.get("Bucket", ""), "?")
    if operation in _S3_BUCKET_ACTIONS:
        return [Need(_S3_BUCKET_ACTIONS[operation], bucket)]
    if operation == "DeleteObjects":
        # Authorized per object by s3:DeleteObject.
        return [Need("s3:DeleteObject", f"{bucket}/{obj['Key']}") for obj in params["Delete"]["Objects"]]
    if operation == "CopyObject":
        # botocore has already turned CopySource into "bucket/key" (URL-quoted) at this point.
        source = params["CopySource"]
        if isinstance(source, dict):
            source_bucket, source_key = source["Bucket"], source["Key"]
        else:
            source_bucket, _, source_key = unquote(source).partition("/")
        return [
            Need("s3:GetObject", f"{bucket_ids.get(source_bucket, '?')}/{source_key}"),
            Need("s3:PutObject", f"{bucket}/{params['Key']}"),
        ]
    return [Need(_S3_OBJECT_ACTIONS.get(operation, f"s3:{operation}"), f"{bucket}/{params.get('Key', '')}")]


def _resource_names(resource: Any) -> list[str]:
    """Logical-id form of a policy Resource: ``Table``, ``Table/index/GSI1``, ``Table/index/*``."""
    items = resource if isinstance(resource, list) else [resource]
    names = []
    for item in items:
        if isinstance(item, dict) and "Fn::GetAtt" in item:
            names.append(
                item["Fn::GetAtt"][0]
                if isinstance(item["Fn::GetAtt"], list)
                else item["Fn::GetAtt"].split(".")[0]
            )
        elif isinstance(item, dict) and "Ref" in item:
            names.append(item["Ref"])
        elif isinstance(item, dict) and "Fn::Sub" in item:
            text = item["Fn::Sub"] if isinstance(item["Fn::Sub"], str) else item["Fn::Sub"][0]
            names.append(text.replace("${", "").replace(".Arn}", "").replace("}", ""))
        else:
            names.append(str(item))
    return names


def _allows(pattern: str, resource: str) -> bool:
    if pattern.endswith("/*"):
        return resource.startswith(pattern[:-1])
    return pattern == resource


def missing_permissions(template: dict[str, Any], function: str, needs: list[Need]) -> list[Need]:
    statements = [
        statement
        for policy in template["Resources"][function]["Properties"].get("Policies", [])
        if isinstance(policy, dict)
        for statement in policy.get("Statement", [])
        if statement.get("Effect") == "Allow"
    ]
    missing = []
    for need in needs:
        allowed = any(
            need.action in (s["Action"] if isinstance(s["Action"], list) else [s["Action"]])
            and any(_allows(name, need.resource) for name in _resource_names(s["Resource"]))
            for s in statements
        )
        if not allowed:
            missing.append(need)
    return missing


@contextlib.contextmanager
def record_aws_calls() -> Iterator[list[tuple[str, str, dict[str, Any]]]]:
    calls: list[tuple[str, str, dict[str, Any]]] = []
    original = BaseClient._make_api_call  # type: ignore[attr-defined]  # private: not in botocore's stubs

    def recording(self: BaseClient, operation_name: str, api_params: dict[str, Any]) -> Any:
        calls.append((self.meta.service_model.service_name, operation_name, api_params))
        return original(self, operation_name, api_params)

    with mock.patch.object(BaseClient, "_make_api_call", recording):
        yield calls
