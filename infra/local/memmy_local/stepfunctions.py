"""Step Functions for the local stack: the state machines' definitions as deployed, run by moto.

``load_definition`` reads a ``AWS::Serverless::StateMachine``'s ASL (``DefinitionUri`` relative to the
template's folder, or an inline ``Definition``) and applies its ``DefinitionSubstitutions`` as
CloudFormation does (text replacement of ``${Name}``), so moto gets exactly the deployed definition.

``cap_retry_delays`` is the one deliberate local change to a definition: moto's interpreter really sleeps
a Retry's intervals (``time.sleep`` in ``RetrierDecl``), so a definition with ``IntervalSeconds: 5``,
``BackoffRate: 2`` and ``MaxAttempts: 6`` would keep a local execution waiting minutes. Locally every
Retry's ``IntervalSeconds`` and ``MaxDelaySeconds`` are capped (1 s by default, moto's minimum for both),
so each retry waits at most that long; what is retried, how often, ``BackoffRate``, ``JitterStrategy``
and every Catch are unchanged. Provisioning applies it unless told otherwise
(``provision(..., max_retry_delay_seconds=None)`` keeps the real delays).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = [
    "LOCAL_MAX_RETRY_DELAY_SECONDS",
    "cap_retry_delays",
    "load_definition",
    "substitute_definition",
]

LOCAL_MAX_RETRY_DELAY_SECONDS: Final = 1
"""Longest wait between two local retries (moto refuses 0 for IntervalSeconds and MaxDelaySeconds)."""

# ${Name} of DefinitionSubstitutions (CloudFormation replaces these in the definition's text).
_SUBSTITUTION: Final = re.compile(r"\$\{([A-Za-z0-9_.:-]+)\}")


# ------------------------------------------------------------------------------------- definitions


def substitute_definition(text: str, substitutions: Mapping[str, Any]) -> str:
    """``text`` with every ``${Name}`` replaced by ``substitutions[Name]`` (already resolved values).

    A name with no substitution is an error here (on AWS it would reach the service as a literal and make
    a broken definition, typically a Lambda task calling a function named ``${...}``).
    """

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in substitutions:
            raise ValueError(f"the definition uses ${{{name}}} but DefinitionSubstitutions has no {name}")
        value = substitutions[name]
        if isinstance(value, bool):
            return "true" if value else "false"
        return str(value)

    return _SUBSTITUTION.sub(replace, text)


def load_definition(properties: Mapping[str, Any], template_dir: Path) -> dict[str, Any]:
    """The ASL of a ``AWS::Serverless::StateMachine`` with resolved ``properties``, substitutions applied."""
    substitutions = properties.get("DefinitionSubstitutions") or {}
    if "Definition" in properties and "DefinitionUri" in properties:
        raise ValueError("a state machine has either Definition or DefinitionUri, not both")
    if "Definition" in properties:
        text = json.dumps(properties["Definition"])
    elif "DefinitionUri" in properties:
        uri = properties["DefinitionUri"]
        if not isinstance(uri, str):
            raise NotImplementedError(
                f"DefinitionUri {uri!r}: only a local file (relative to the template) is read locally"
            )
        text = (template_dir / uri).read_text(encoding="utf-8")
    else:
        raise ValueError("a state machine needs a Definition or a DefinitionUri")
    definition = json.loads(substitute_definition(text, substitutions))
    if not isinstance(definition, dict):
        raise ValueError("a state machine definition is a JSON object")
    return definition


# ------------------------------------------------------------------------------------ retry delays


def cap_retry_delays(
    definition: Mapping[str, Any], max_seconds: int = LOCAL_MAX_RETRY_DELAY_SECONDS
) -> dict[str, Any]:
    """A copy of ``definition`` in which no Retry waits longer than ``max_seconds`` between attempts.

    Every Retry of every state, nested ``Parallel`` branches and ``Map`` processors included, gets
    ``IntervalSeconds = min(IntervalSeconds, max_seconds)`` and ``MaxDelaySeconds = min(MaxDelaySeconds,
    max_seconds)`` (set when absent, since a backoff grows without it). Nothing else changes.
    """
    if max_seconds < 1:
        raise ValueError("moto accepts IntervalSeconds and MaxDelaySeconds of at least 1")
    capped = copy.deepcopy(dict(definition))
    _cap_states(capped, max_seconds)
    return capped


def _cap_states(machine: dict[str, Any], max_seconds: int) -> None:
    for state in (machine.get("States") or {}).values():
        for retrier in state.get("Retry") or []:
            retrier["IntervalSeconds"] = min(int(retrier.get("IntervalSeconds", 1)), max_seconds)
            retrier["MaxDelaySeconds"] = min(int(retrier.get("MaxDelaySeconds", max_seconds)), max_seconds)
        for branch in state.get("Branches") or []:
            _cap_states(branch, max_seconds)
        for key in ("ItemProcessor", "Iterator"):
            if isinstance(state.get(key), dict):
                _cap_states(state[key], max_seconds)
