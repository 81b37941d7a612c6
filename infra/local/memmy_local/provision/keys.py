"""Provisioners for the MCP authorization server's key and settings: the KMS signing key (with the
template's key spec, usage and policy) and its alias, and an SSM parameter. Each refuses a property it
does not provision, so the local resource matches the deployed one."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final

from .context import ProvisionContext

_KEY_HANDLED: Final = frozenset({"Description", "KeySpec", "KeyUsage", "KeyPolicy", "Tags"})
# Retention and rotation: what happens to the key over months on AWS, nothing a local run sees.
_KEY_IGNORED: Final = frozenset({"PendingWindowInDays", "EnableKeyRotation", "Enabled", "MultiRegion"})
_ALIAS_HANDLED: Final = frozenset({"AliasName", "TargetKeyId"})
_PARAMETER_HANDLED: Final = frozenset({"Name", "Type", "Value", "Description", "Tier"})


def _refuse_unknown(logical_id: str, what: str, properties: Mapping[str, Any], known: frozenset[str]) -> None:
    unknown = set(properties) - known
    if unknown:
        raise NotImplementedError(
            f"{logical_id}: {what} properties not provisioned locally: {sorted(unknown)}"
        )


def provision_kms_key(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    """The key as the template declares it (moto signs with it); its Ref is the key id, as on AWS."""
    _refuse_unknown(logical_id, "KMS key", properties, _KEY_HANDLED | _KEY_IGNORED)
    request: dict[str, Any] = {
        "KeySpec": properties.get("KeySpec", "SYMMETRIC_DEFAULT"),
        "KeyUsage": properties.get("KeyUsage", "ENCRYPT_DECRYPT"),
        "Description": properties.get("Description", f"{ctx.prefix}-{logical_id}"),
    }
    if "KeyPolicy" in properties:
        policy = properties["KeyPolicy"]
        request["Policy"] = policy if isinstance(policy, str) else json.dumps(policy)
    if "Tags" in properties:
        request["Tags"] = [{"TagKey": t["Key"], "TagValue": t["Value"]} for t in properties["Tags"]]
    metadata = ctx.client("kms").create_key(**request)["KeyMetadata"]
    key_id, arn = str(metadata["KeyId"]), str(metadata["Arn"])
    return {logical_id: key_id, f"{logical_id}.Arn": arn, f"{logical_id}.KeyId": key_id}


def provision_kms_alias(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    _refuse_unknown(logical_id, "KMS alias", properties, _ALIAS_HANDLED)
    name = str(properties["AliasName"])
    ctx.client("kms").create_alias(AliasName=name, TargetKeyId=str(properties["TargetKeyId"]))
    return {logical_id: name}


def provision_ssm_parameter(
    ctx: ProvisionContext, logical_id: str, properties: Mapping[str, Any]
) -> dict[str, str]:
    """A String parameter; its Ref is its name, as on AWS."""
    _refuse_unknown(logical_id, "SSM parameter", properties, _PARAMETER_HANDLED)
    name = ctx.physical_name(logical_id, properties, "Name")
    request = {"Name": name, "Type": properties.get("Type", "String"), "Value": str(properties["Value"])}
    if "Description" in properties:
        request["Description"] = str(properties["Description"])
    ctx.client("ssm").put_parameter(**request, Overwrite=True)
    return {logical_id: name}
