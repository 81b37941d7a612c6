"""template.yaml as AWS would see it, offline: translated from SAM to CloudFormation with ``samtranslator``
and linted with cfn-lint's settings (``LINT_CONFIG``), for the template's tests."""

from __future__ import annotations

import copy
from typing import Any

import pytest

# Neither ships type information.
from cfnlint.config import ManualArgs  # type: ignore[import-untyped]
from samtranslator.translator.transform import transform  # type: ignore[import-untyped]

from memmy_local.template import TEMPLATE_PATH

REPO_ROOT = TEMPLATE_PATH.parent
LINT_CONFIG = ManualArgs(regions=["us-east-1"], include_checks=["I"])


class _NoManagedPolicies:
    """The managed-policy loader: the template names no managed policies, so nothing to look up."""

    def load(self) -> dict[str, str]:
        return {}


def translate(sam_template: dict[str, Any]) -> dict[str, Any]:
    """Translate SAM to CloudFormation offline, local code paths replaced by placeholder S3 locations."""
    sam = copy.deepcopy(sam_template)
    for resource in sam["Resources"].values():
        properties = resource.get("Properties") or {}
        for key in ("CodeUri", "ContentUri", "DefinitionUri"):
            if isinstance(properties.get(key), str):
                properties[key] = f"s3://placeholder-bucket/{properties[key].strip('/')}.zip"
    with pytest.MonkeyPatch.context() as patch:
        # The translator needs a region for its pseudo parameters, even offline.
        patch.setenv("AWS_DEFAULT_REGION", "us-east-1")
        cloudformation: dict[str, Any] = transform(sam, {}, _NoManagedPolicies())
        return cloudformation


def resources_of(template: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {name: r for name, r in template["Resources"].items() if r["Type"] == kind}
