"""Provisioners for how work moves: SQS queues, the functions (refs only: their handlers run in-process)
and Step Functions state machines (their ASL loaded and its Retry delays capped locally)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from memmy_local.aws.stepfunctions import cap_retry_delays, load_definition

from .context import ProvisionContext

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


def provision_queue(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
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


def function_refs(ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]) -> dict[str, str]:
    # Nothing is created: the handler runs in-process (gateway, runners, the Step Functions dispatcher).
    name = ctx.physical_name(logical_id, properties, "FunctionName")
    arn = f"arn:aws:lambda:{ctx.region}:{ctx.refs['AWS::AccountId']}:function:{name}"
    return {logical_id: name, f"{logical_id}.Arn": arn}


STATE_MACHINE_PROPERTIES: Final = frozenset(
    {"Name", "Type", "Definition", "DefinitionUri", "DefinitionSubstitutions"}
)
# What SAM makes of these (an execution role from Policies, log delivery, X-Ray, tags) has no local
# effect: moto runs every execution without IAM. Events (schedules, rules, APIs that start executions)
# are not in either set: nothing would start them locally, so they stop provisioning.
_STATE_MACHINE_IGNORED: Final = frozenset(
    {"Policies", "Role", "RolePath", "PermissionsBoundary", "Logging", "Tracing", "Tags", "PropagateTags"}
)


def provision_state_machine(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    unknown = set(properties) - STATE_MACHINE_PROPERTIES - _STATE_MACHINE_IGNORED
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
