"""Reading ``template.yaml`` for the local stack and the tests: the template parsed with CloudFormation's
short-form tags, and the few intrinsics a local run needs resolved, Conditions included (evaluated from
the parameters, kept in ``refs`` as ``Condition:<Name>`` for ``Fn::If``)."""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

__all__ = [
    "CONDITION_REF_PREFIX",
    "TEMPLATE_PATH",
    "Route",
    "UnresolvableValueError",
    "condition_refs",
    "function_environment",
    "http_routes",
    "is_active",
    "load_template",
    "parameter_defaults",
    "referenced_logical_ids",
    "resolve_intrinsics",
    "template_path",
]

TEMPLATE_PATH: Final = Path(__file__).resolve().parents[3] / "template.yaml"
"""The repository's ``template.yaml`` (the package is installed editable, so this is the working tree)."""

TEMPLATE_ENV_VAR: Final = "MEMMY_KB_TEMPLATE"

_SERVERLESS_FUNCTION: Final = "AWS::Serverless::Function"
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


def template_path() -> Path:
    """The template to read: ``$MEMMY_KB_TEMPLATE`` when set, else the repository's ``template.yaml``."""
    override = os.environ.get(TEMPLATE_ENV_VAR)
    return Path(override) if override else TEMPLATE_PATH


# ---------------------------------------------------------------------------------------------- loading


class _CloudFormationLoader(yaml.SafeLoader):
    """SafeLoader plus CloudFormation's short-form tags, each turned into its long (JSON) form."""


def _construct_node(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    assert isinstance(node, yaml.MappingNode)  # YAML has no fourth kind of node
    return loader.construct_mapping(node, deep=True)


def _long_form(name: str) -> Callable[[yaml.SafeLoader, yaml.Node], dict[str, Any]]:
    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        return {name: _construct_node(loader, node)}

    return construct


def _construct_get_att(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
    value = _construct_node(loader, node)
    if isinstance(value, str):
        # "Resource.Attr.With.Dots": only the first dot separates the logical id.
        logical_id, _, attribute = value.partition(".")
        value = [logical_id, attribute]
    return {"Fn::GetAtt": value}


def _construct_date_as_text(loader: yaml.SafeLoader, node: yaml.ScalarNode) -> str:
    return loader.construct_scalar(node)


_SHORT_FORMS: Final[Mapping[str, str]] = {
    "!Ref": "Ref",
    "!Condition": "Condition",
    "!Sub": "Fn::Sub",
    "!Join": "Fn::Join",
    "!If": "Fn::If",
    "!Equals": "Fn::Equals",
    "!Select": "Fn::Select",
    "!Split": "Fn::Split",
    "!FindInMap": "Fn::FindInMap",
    "!ImportValue": "Fn::ImportValue",
    "!Base64": "Fn::Base64",
    "!Not": "Fn::Not",
    "!And": "Fn::And",
    "!Or": "Fn::Or",
    "!GetAZs": "Fn::GetAZs",
    "!Cidr": "Fn::Cidr",
    "!Transform": "Fn::Transform",
    "!ToJsonString": "Fn::ToJsonString",
    "!Length": "Fn::Length",
}

for _tag, _name in _SHORT_FORMS.items():
    _CloudFormationLoader.add_constructor(_tag, _long_form(_name))
_CloudFormationLoader.add_constructor("!GetAtt", _construct_get_att)
# CloudFormation reads an unquoted 2010-09-09 as a string, not a date.
_CloudFormationLoader.add_constructor("tag:yaml.org,2002:timestamp", _construct_date_as_text)


def load_template(path: Path | None = None) -> dict[str, Any]:
    """Parse a CloudFormation/SAM YAML template, short-form tags in their long forms (``!Ref X`` →
    ``{"Ref": "X"}``, ``!GetAtt A.B`` → ``{"Fn::GetAtt": ["A", "B"]}``, ...)."""
    source = path or template_path()
    document = yaml.load(source.read_text(encoding="utf-8"), Loader=_CloudFormationLoader)  # noqa: S506
    if not isinstance(document, dict) or not isinstance(document.get("Resources"), dict):
        raise ValueError(f"{source} is not a CloudFormation template (no Resources mapping)")
    return document


# ----------------------------------------------------------------------------------------------- queries


@dataclass(frozen=True)
class Route:
    """One HTTP API route: ``method`` upper-cased, ``path`` as in the template (``{kb_id}`` parameters)."""

    method: str
    path: str
    function: str
    code_uri: str
    handler: str


def _functions(template: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource
        for logical_id, resource in template["Resources"].items()
        if resource.get("Type") == _SERVERLESS_FUNCTION
    }


def _function_globals(template: Mapping[str, Any]) -> dict[str, Any]:
    return (template.get("Globals") or {}).get("Function") or {}


def http_routes(template: Mapping[str, Any]) -> list[Route]:
    """Every ``HttpApi`` event of every ``AWS::Serverless::Function``, in template order."""
    globals_ = _function_globals(template)
    routes: list[Route] = []
    for logical_id, resource in _functions(template).items():
        properties = resource.get("Properties") or {}
        code_uri = properties.get("CodeUri", globals_.get("CodeUri"))
        handler = properties.get("Handler", globals_.get("Handler"))
        for event_id, event in (properties.get("Events") or {}).items():
            if event.get("Type") != "HttpApi":
                continue
            event_properties = event.get("Properties") or {}
            method, path = event_properties.get("Method"), event_properties.get("Path")
            if not (isinstance(method, str) and isinstance(path, str)):
                # SAM would make this a catch-all $default route; the service declares every route.
                raise ValueError(
                    f"{logical_id}.Events.{event_id}: an HttpApi event needs a Method and a Path"
                )
            if not (isinstance(code_uri, str) and isinstance(handler, str)):
                raise ValueError(f"{logical_id}: CodeUri and Handler must be local paths/strings")
            routes.append(Route(method.upper(), path, logical_id, code_uri, handler))
    return routes


def parameter_defaults(template: Mapping[str, Any]) -> dict[str, str]:
    """Each parameter that has a ``Default``, as the string CloudFormation would pass."""
    return {
        name: _as_string(spec["Default"])
        for name, spec in (template.get("Parameters") or {}).items()
        if "Default" in spec
    }


def function_environment(
    template: Mapping[str, Any], function: str, refs: Mapping[str, str]
) -> dict[str, str]:
    """The resolved environment variables of ``function``: Globals merged with its own (its own win).

    ``refs`` maps logical ids and parameter names to physical values, and ``"<Id>.<Attr>"`` to
    attributes. Raises ``UnresolvableValueError`` (a ``KeyError``) naming the variable that cannot be
    resolved.
    """
    resource = _functions(template).get(function)
    if resource is None:
        raise UnresolvableValueError(f"{function} is not an {_SERVERLESS_FUNCTION} in the template")
    variables = {
        **((_function_globals(template).get("Environment") or {}).get("Variables") or {}),
        **(((resource.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}),
    }
    refs = {**condition_refs(template, {**parameter_defaults(template), **refs}), **refs}
    environment: dict[str, str] = {}
    for name, value in variables.items():
        try:
            resolved = _resolve(value, refs)
            if resolved is not _DROPPED:
                environment[name] = _as_string(resolved)
        except UnresolvableValueError as error:
            raise UnresolvableValueError(f"{function} environment variable {name}: {error}") from None
    return environment


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
                left, right = (_as_string(resolve_intrinsics(side, refs)) for side in argument)
                return left == right
            if function == "Fn::Not":
                return not truth(argument[0])
            if function in ("Fn::And", "Fn::Or"):
                return (all if function == "Fn::And" else any)(truth(operand) for operand in argument)
        raise UnresolvableValueError(f"{expression!r} is not a condition the local stack evaluates")

    values: dict[str, str] = {}
    for name, expression in conditions.items():
        with contextlib.suppress(UnresolvableValueError):
            values[CONDITION_REF_PREFIX + name] = _as_string(truth(expression))
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
_DROPPED: Final = object()


def resolve_intrinsics(value: Any, refs: Mapping[str, str]) -> Any:
    """``value`` with ``Ref``, ``Fn::Sub``, ``Fn::GetAtt``, ``Fn::Join`` and ``Fn::If`` resolved from ``refs``.

    Works on whole property trees: plain scalars stay as they are, and a ``{"Ref": "AWS::NoValue"}``
    drops its key or list item. ``Fn::If`` reads its condition from ``refs`` (``condition_refs``). Any
    other intrinsic, or a name missing from ``refs``, raises ``UnresolvableValueError``.
    """
    resolved = _resolve(value, refs)
    if resolved is _DROPPED:
        raise UnresolvableValueError(f"{value!r} resolves to {_NO_VALUE}, which is no value")
    return resolved


def _resolve(value: Any, refs: Mapping[str, str]) -> Any:
    if isinstance(value, list):
        return [item for item in (_resolve(item, refs) for item in value) if item is not _DROPPED]
    if not isinstance(value, Mapping):
        return value
    if not _is_intrinsic(value):
        resolved = {key: _resolve(item, refs) for key, item in value.items()}
        return {key: item for key, item in resolved.items() if item is not _DROPPED}
    ((function, argument),) = value.items()
    if function == "Ref":
        return _DROPPED if argument == _NO_VALUE else _lookup(argument, refs)
    if function == "Fn::If":
        name, if_true, if_false = argument
        try:
            chosen = if_true if _condition(name, refs) else if_false
        except UnresolvableValueError as error:
            raise UnresolvableValueError(f"Fn::If: {error}") from None
        return _resolve(chosen, refs)
    if function == "Fn::GetAtt":
        logical_id, attribute = argument.split(".", 1) if isinstance(argument, str) else argument
        return _lookup(f"{logical_id}.{attribute}", refs)
    if function == "Fn::Sub":
        text, variables = (argument, {}) if isinstance(argument, str) else argument
        resolved_variables = {name: _as_string(resolve_intrinsics(v, refs)) for name, v in variables.items()}
        return _substitute(text, resolved_variables, refs)
    if function == "Fn::Join":
        delimiter, items = argument
        return delimiter.join(_as_string(item) for item in resolve_intrinsics(items, refs))
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


def _as_string(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str | int | float):
        return str(value)
    raise UnresolvableValueError(f"{value!r} is not a scalar value")
