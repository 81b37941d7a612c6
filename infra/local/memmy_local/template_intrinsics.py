"""The intrinsics and Conditions of ``template.yaml`` that a local run resolves: ``Ref``, ``Fn::Sub``,
``Fn::GetAtt``, ``Fn::Join`` and ``Fn::If`` from ``refs`` (logical ids, parameters and attributes to their
local values), Conditions evaluated from the parameters and kept in ``refs`` as ``Condition:<Name>``."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Mapping
from typing import Any, Final

__all__ = [
    "CONDITION_REF_PREFIX",
    "DROPPED",
    "UnresolvableValueError",
    "as_string",
    "condition_refs",
    "is_active",
    "referenced_logical_ids",
    "resolve_intrinsics",
    "resolve_value",
]

# Pseudo parameters with a value that does not depend on where the local stack runs. Account id and
# stack name are deliberately absent: callers put theirs in ``refs``.
_PSEUDO_DEFAULTS: Final[Mapping[str, str]] = {
    "AWS::Region": "us-east-1",
    "AWS::Partition": "aws",
    "AWS::URLSuffix": "amazonaws.com",
}
_NO_VALUE: Final = "AWS::NoValue"
CONDITION_REF_PREFIX: Final = "Condition:"
"""Key prefix of a condition's value (``"true"``/``"false"``) in ``refs``; no logical id contains a colon."""
# ``${Name}``, ``${Name.Attr}`` and the escaped literal ``${!Name}`` of Fn::Sub.
_SUB_VARIABLE: Final = re.compile(r"\$\{([^}]*)\}")


# ------------------------------------------------------------------------------------------- conditions


def condition_refs(template: Mapping[str, Any], refs: Mapping[str, str]) -> dict[str, str]:
    """Each of the template's ``Conditions`` that ``refs`` can decide, as ``{"Condition:<Name>": "true"|"false"}``.

    Supports ``Fn::Equals``, ``Fn::Not``, ``Fn::And``, ``Fn::Or`` and ``Condition``; a condition that
    refers to a value ``refs`` lacks is left out (an ``Fn::If`` on it then cannot be resolved).
    """
    conditions: Mapping[str, Any] = template.get("Conditions") or {}

    def truth(expression: Any) -> bool:
        if isinstance(expression, Mapping) and len(expression) == 1:
            ((function, argument),) = expression.items()
            if function == "Condition" and argument in conditions:
                return truth(conditions[argument])
            if function == "Fn::Equals":
                left, right = (as_string(resolve_intrinsics(side, refs)) for side in argument)
                return left == right
            if function == "Fn::Not":
                return not truth(argument[0])
            if function in ("Fn::And", "Fn::Or"):
                return (all if function == "Fn::And" else any)(truth(operand) for operand in argument)
        raise UnresolvableValueError(f"{expression!r} is not a condition the local stack evaluates")

    values: dict[str, str] = {}
    for name, expression in conditions.items():
        with contextlib.suppress(UnresolvableValueError):
            values[CONDITION_REF_PREFIX + name] = as_string(truth(expression))
    return values


def is_active(resource: Mapping[str, Any], refs: Mapping[str, str]) -> bool:
    """Whether ``resource`` exists: it has no ``Condition``, or its condition is true in ``refs``."""
    condition = resource.get("Condition")
    return condition is None or _condition(condition, refs)


def _condition(name: str, refs: Mapping[str, str]) -> bool:
    try:
        return refs[CONDITION_REF_PREFIX + name] == "true"
    except KeyError:
        raise UnresolvableValueError(f"no local value for condition {name!r}") from None


# ------------------------------------------------------------------------------------------- intrinsics


class UnresolvableValueError(KeyError):
    """A reference or intrinsic that the given ``refs`` cannot resolve."""

    def __str__(self) -> str:
        # KeyError's own __str__ would show the message as a quoted repr.
        return str(self.args[0]) if self.args else ""


_INTRINSIC_PREFIX: Final = "Fn::"


def _is_intrinsic(value: Mapping[str, Any]) -> bool:
    if len(value) != 1:
        return False
    key = next(iter(value))
    return key in {"Ref", "Condition"} or key.startswith(_INTRINSIC_PREFIX)


def _lookup(name: str, refs: Mapping[str, str]) -> str:
    if name in refs:
        return refs[name]
    if name in _PSEUDO_DEFAULTS:
        return _PSEUDO_DEFAULTS[name]
    raise UnresolvableValueError(f"no local value for {name!r}")


def _substitute(text: str, variables: Mapping[str, str], refs: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name.startswith("!"):
            return "${" + name[1:] + "}"
        if name in variables:
            return variables[name]
        return _lookup(name, refs)

    return _SUB_VARIABLE.sub(replace, text)


# What a ``{"Ref": "AWS::NoValue"}`` (written, or chosen by ``Fn::If``) resolves to: its key or item goes.
DROPPED: Final = object()


def resolve_intrinsics(value: Any, refs: Mapping[str, str]) -> Any:
    """``value`` with ``Ref``, ``Fn::Sub``, ``Fn::GetAtt``, ``Fn::Join`` and ``Fn::If`` resolved from ``refs``.

    Works on whole property trees: plain scalars stay as they are, and a ``{"Ref": "AWS::NoValue"}``
    drops its key or list item. ``Fn::If`` reads its condition from ``refs`` (``condition_refs``). Any
    other intrinsic, or a name missing from ``refs``, raises ``UnresolvableValueError``.
    """
    resolved = resolve_value(value, refs)
    if resolved is DROPPED:
        raise UnresolvableValueError(f"{value!r} resolves to {_NO_VALUE}, which is no value")
    return resolved


def resolve_value(value: Any, refs: Mapping[str, str]) -> Any:
    if isinstance(value, list):
        return [item for item in (resolve_value(item, refs) for item in value) if item is not DROPPED]
    if not isinstance(value, Mapping):
        return value
    if not _is_intrinsic(value):
        resolved = {key: resolve_value(item, refs) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not DROPPED}
    ((function, argument),) = value.items()
    if function == "Ref":
        return DROPPED if argument == _NO_VALUE else _lookup(argument, refs)
    if function == "Fn::If":
        name, if_true, if_false = argument
        try:
            chosen = if_true if _condition(name, refs) else if_false
        except UnresolvableValueError as error:
            raise UnresolvableValueError(f"Fn::If: {error}") from None
        return resolve_value(chosen, refs)
    if function == "Fn::GetAtt":
        logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
        return _lookup(f"{logical_id}.{attribute}", refs)
    if function == "Fn::Sub":
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        resolved_variables = {name: as_string(resolve_intrinsics(v, refs)) for name, v in variables.items()}
        return _substitute(text, resolved_variables, refs)
    if function == "Fn::Join":
        delimiter, items = argument
        return delimiter.join(as_string(item) for item in resolve_intrinsics(items, refs))
    raise UnresolvableValueError(f"{function} is not resolved locally")


def referenced_logical_ids(value: Any) -> set[str]:
    """Every name that ``Ref``, ``Fn::GetAtt`` or ``Fn::Sub`` in ``value`` refers to (pseudo
    parameters excluded): the dependencies of a resource whose properties are ``value``."""
    names: set[str] = set()
    if isinstance(value, list):
        for item in value:
            names |= referenced_logical_ids(item)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            if key == "Ref" and isinstance(item, str):
                names.add(item)
            elif key == "Fn::GetAtt":
                names.add(item.split(".", 1)[0] if isinstance(item, str) else item[0])
            elif key == "Fn::Sub":
                text, variables = (item, {}) if isinstance(item, str) else item
                for name in _SUB_VARIABLE.findall(text):
                    if not name.startswith("!") and name not in variables:
                        names.add(name.split(".", 1)[0])
                names |= referenced_logical_ids(variables)
            else:
                names |= referenced_logical_ids(item)
    return {name for name in names if not name.startswith("AWS::")}


def as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise UnresolvableValueError(f"{value!r} is not a scalar value")
