"""Reading ``template.yaml`` for the local stack and the tests: the template parsed with CloudFormation's
short-form tags, and what the stack asks of it (routes, parameters, a function's environment). The
intrinsics and Conditions it resolves are ``memmy_local.template_intrinsics``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import yaml

from memmy_local.template_intrinsics import (
    DROPPED,
    UnresolvableValueError,
    as_string,
    condition_refs,
    resolve_value,
)

__all__ = [
    "TEMPLATE_PATH",
    "Route",
    "function_environment",
    "http_routes",
    "load_template",
    "parameter_defaults",
    "template_path",
]

TEMPLATE_PATH: Final = Path(__file__).resolve().parents[3] / "template.yaml"
"""The repository's ``template.yaml`` (the package is installed editable, so this is the working tree)."""

TEMPLATE_ENV_VAR: Final = "MEMMY_KB_TEMPLATE"

_SERVERLESS_FUNCTION: Final = "AWS::Serverless::Function"


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
        name: as_string(spec["Default"])
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
            resolved = resolve_value(value, refs)
            if resolved is not DROPPED:
                environment[name] = as_string(resolved)
        except UnresolvableValueError as error:
            raise UnresolvableValueError(f"{function} environment variable {name}: {error}") from None
    return environment
