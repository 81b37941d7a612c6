"""The process environment the local stack sets and puts back: fake AWS credentials, and the template
functions' environment variables (resolved per function, merged for the handlers' lazy reads)."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from memmy_local.template import function_environment

log = logging.getLogger("memmy_local.environment")

FAKE_CREDENTIAL = "memmy-local"

_Saved = dict[str, str | None]


def fake_aws_environment(region: str) -> dict[str, str | None]:
    return {
        "AWS_DEFAULT_REGION": region,
        "AWS_REGION": region,
        "AWS_ACCESS_KEY_ID": FAKE_CREDENTIAL,
        "AWS_SECRET_ACCESS_KEY": FAKE_CREDENTIAL,
        "AWS_SESSION_TOKEN": None,
        # A profile or SSO session from the developer's shell must not take over from the fake keys.
        "AWS_PROFILE": None,
        "AWS_DEFAULT_PROFILE": None,
        "AWS_EC2_METADATA_DISABLED": "true",
        # Template has Tracing: Active; there is no X-Ray daemon locally.
        "POWERTOOLS_TRACE_DISABLED": "true",
    }


def set_environment(variables: Mapping[str, str | None]) -> _Saved:
    """Apply ``variables`` (None unsets) to ``os.environ``; return what is needed to undo it."""
    saved: _Saved = {name: os.environ.get(name) for name in variables}
    for name, value in variables.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return saved


def restore_environment(saved: _Saved) -> None:
    set_environment(saved)


def function_environments(template: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Every ``AWS::Serverless::Function``'s resolved environment variables, by logical id."""
    return {
        logical_id: function_environment(template, logical_id, refs)
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == "AWS::Serverless::Function"
    }


def merged_environment(environments: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """The union of the functions' environments, which handlers read lazily from ``os.environ``.

    A variable that differs between functions keeps the first function's value here (a warning says
    so); the gateway still imports each module with its own values, which covers module-level reads.
    """
    merged: dict[str, str] = {}
    owners: dict[str, str] = {}
    for function, variables in environments.items():
        for name, value in variables.items():
            if name not in merged:
                merged[name], owners[name] = value, function
            elif merged[name] != value:
                log.warning(
                    "%s differs between %s and %s; lazy reads see %s's",
                    name,
                    owners[name],
                    function,
                    owners[name],
                )
    return merged
