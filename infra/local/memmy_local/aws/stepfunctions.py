"""Step Functions for the local stack: the state machines' definitions as deployed, run by moto's
interpreter, with their Lambda tasks run in this process and ``States.ALL`` matching as on AWS
(docs/architecture.md, "Local stack")."""

from __future__ import annotations

import contextlib
import copy
import json
import logging
import re
import threading
import traceback
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final

__all__ = [
    "LOCAL_MAX_RETRY_DELAY_SECONDS",
    "MOTO_VERSION",
    "FunctionLoader",
    "LambdaDispatcher",
    "TaskHandler",
    "cap_retry_delays",
    "dispatching",
    "load_definition",
    "states_all_as_on_aws",
    "substitute_definition",
]

log = logging.getLogger("memmy_local.stepfunctions")

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
    """The ASL of a ``AWS::Serverless::StateMachine`` with resolved ``properties`` (``DefinitionUri``
    relative to the template's folder, or an inline ``Definition``), its ``DefinitionSubstitutions``
    applied as CloudFormation does (text replacement of ``${Name}``): exactly the deployed definition."""
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
    """A copy of ``definition`` in which no Retry waits longer than ``max_seconds`` between attempts: the
    one deliberate local change to a definition (provisioning applies it unless told otherwise).

    moto's interpreter really sleeps a Retry's intervals (``time.sleep`` in ``RetrierDecl``), so
    ``IntervalSeconds: 5``, ``BackoffRate: 2`` and ``MaxAttempts: 6`` would keep a local execution waiting
    minutes. Every Retry of every state, nested ``Parallel`` branches and ``Map`` processors included, gets
    ``IntervalSeconds = min(IntervalSeconds, max_seconds)`` and ``MaxDelaySeconds = min(MaxDelaySeconds,
    max_seconds)`` (set when absent, since a backoff grows without it). What is retried, how often,
    ``BackoffRate``, ``JitterStrategy`` and every Catch are unchanged.
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


# --------------------------------------------------------------------------------- Lambda dispatch

MOTO_VERSION: Final = "5.2.5"
"""The moto release whose interpreter ``dispatching`` patches (pinned in pyproject.toml's ``local`` extra).

In moto 5.2.5, both ways a state machine calls Lambda (``StateTaskServiceLambda._eval_service_task`` for
``arn:aws:states:::lambda:invoke`` and ``StateTaskLambda._eval_execution`` for a function ARN as Resource)
go through ``moto/stepfunctions/parser/asl/component/state/exec/state_task/lambda_eval_utils.py``:
``execute_lambda_function_integration`` calls the module-level ``_invoke_lambda_function(parameters,
region, state_credentials)``, which makes a boto3 ``lambda.invoke`` and returns the response with
``Payload`` already decoded from JSON. That function is what gets replaced; the caller's handling of
``FunctionError`` (raising ``LambdaFunctionErrorException``) and
``StateTaskServiceLambda._from_error`` (Error = the payload's ``errorType``, Cause = the payload) stay
moto's. Check both again before moving the pin.
"""

TaskHandler = Callable[[Any], Any]
"""A stand-in for a function in tests: called with the task's payload, returns the result or raises."""

FunctionLoader = Callable[[str], Any]
"""Logical id -> ``memmy_local.lambdas.functions.LocalFunction`` (loaded once, on first use)."""

# The Python runtime's FunctionError for an exception that escaped the handler.
_UNHANDLED: Final = "Unhandled"
_LOCAL_PACKAGE_DIR: Final = Path(__file__).resolve().parent


class LambdaDispatcher:
    """Lambda Invoke for moto's interpreter: function name or ARN -> a handler run in this process.

    moto's own Lambda would need Docker, and without it only echoes the payload. The dispatcher answers as
    the Invoke API does: the handler's JSON result as ``Payload``, or, when the handler raises,
    ``FunctionError: Unhandled`` with the Python runtime's error payload (``errorType`` = the exception's
    class name), which moto turns into the task failure Retry and Catch see on AWS (Error: that name,
    Cause: the payload). An unknown function fails the task with ``Lambda.ResourceNotFoundException``.

    ``functions`` maps each function's name (``!Ref``) to its template logical id; ``loader`` loads a
    logical id as a ``LocalFunction`` (one warm container, like the gateway's). ``overrides`` maps a
    function name or logical id to a ``TaskHandler`` that is called instead (tests register small
    handlers this way).
    """

    def __init__(
        self,
        functions: Mapping[str, str] | None = None,
        loader: FunctionLoader | None = None,
        overrides: Mapping[str, TaskHandler] | None = None,
    ) -> None:
        self._logical_ids = dict(functions or {})
        self._loader = loader
        self._overrides: dict[str, TaskHandler] = {}
        self._loaded: dict[str, Any] = {}
        self._lock = threading.Lock()
        for key, handler in (overrides or {}).items():
            self.override(key, handler)

    @classmethod
    def for_template(
        cls,
        template: Mapping[str, Any],
        refs: Mapping[str, str],
        loader: FunctionLoader | None = None,
        overrides: Mapping[str, TaskHandler] | None = None,
    ) -> LambdaDispatcher:
        """Every ``AWS::Serverless::Function`` of ``template`` under the name provisioning gave it."""
        functions = {
            refs[logical_id]: logical_id
            for logical_id, resource in template["Resources"].items()
            if resource.get("Type") == "AWS::Serverless::Function" and logical_id in refs
        }
        return cls(functions, loader, overrides)

    def override(self, function: str, handler: TaskHandler | None) -> None:
        """Call ``handler`` for ``function`` (a name, ARN or logical id) from now on; ``None`` goes back
        to the template's function."""
        by_logical_id = {logical_id: name for name, logical_id in self._logical_ids.items()}
        name = by_logical_id.get(function) or function_name_of(function)[0]
        if handler is None:
            self._overrides.pop(name, None)
        else:
            self._overrides[name] = handler

    def invoke(self, parameters: Mapping[str, Any]) -> dict[str, Any]:
        """Lambda's Invoke for ``parameters`` (FunctionName, Payload as JSON bytes, Qualifier...): the
        response with ``Payload`` decoded, as moto's ``_invoke_lambda_function`` returns it."""
        target = str(parameters["FunctionName"])
        name, _qualifier = function_name_of(target)
        request_id = str(uuid.uuid4())
        raw = parameters.get("Payload")
        event = json.loads(raw) if raw else {}
        handler = self._handler(name)
        if handler is None:
            raise _resource_not_found(target, request_id)
        try:
            result = handler(event, request_id)
        except Exception as error:
            log.info("Lambda task %s raised %s: %s", name, type(error).__name__, error)
            return _error_response(_error_type(error), str(error), request_id, error.__traceback__)
        try:
            payload = json.loads(json.dumps(result))
        except (TypeError, ValueError) as error:
            return _error_response(
                "Runtime.MarshalError", f"Unable to marshal response: {error}", request_id, None
            )
        return {"StatusCode": 200, "ExecutedVersion": "$LATEST", "Payload": payload}

    def _handler(self, name: str) -> Callable[[Any, str], Any] | None:
        override = self._overrides.get(name)
        if override is not None:
            return lambda event, _request_id: override(event)
        logical_id = self._logical_ids.get(name)
        if logical_id is None or self._loader is None:
            return None
        with self._lock:
            function = self._loaded.get(logical_id)
            if function is None:
                function = self._loaded[logical_id] = self._loader(logical_id)
        invoke: Callable[[Any, str], Any] = function.invoke
        return invoke


def function_name_of(function: str) -> tuple[str, str | None]:
    """(name, qualifier) of a Lambda FunctionName: ``name``, ``name:qualifier``, a full ARN
    (``arn:aws:lambda:region:account:function:name[:qualifier]``) or a partial one
    (``account:function:name[:qualifier]``)."""
    parts = function.split(":")
    if parts[0] == "arn" and len(parts) >= 7:
        return parts[6], parts[7] if len(parts) > 7 else None
    if len(parts) >= 3 and parts[1] == "function":
        return parts[2], parts[3] if len(parts) > 3 else None
    return parts[0], parts[1] if len(parts) > 1 else None


def _error_type(error: BaseException) -> str:
    from memmy_local.lambdas.functions import FunctionNotLoadedError

    # A function whose module failed to import fails every invocation with the runtime's init error.
    return "Runtime.ImportModuleError" if isinstance(error, FunctionNotLoadedError) else type(error).__name__


def _error_response(error_type: str, message: str, request_id: str, tb: Any) -> dict[str, Any]:
    # The Python runtime's payload for an unhandled exception; its trace starts in the handler, so the
    # local stack's own frames (this dispatcher, LocalFunction.invoke) are left out.
    frames = [
        frame for frame in traceback.extract_tb(tb) if Path(frame.filename).parent != _LOCAL_PACKAGE_DIR
    ]
    stack = traceback.format_list(frames)
    payload = {"errorMessage": message, "errorType": error_type, "requestId": request_id, "stackTrace": stack}
    return {"StatusCode": 200, "FunctionError": _UNHANDLED, "ExecutedVersion": "$LATEST", "Payload": payload}


def _resource_not_found(function: str, request_id: str) -> Exception:
    from botocore.exceptions import ClientError

    return ClientError(
        {
            "Error": {"Code": "ResourceNotFoundException", "Message": f"Function not found: {function}"},
            "ResponseMetadata": {
                "HTTPStatusCode": 404,
                "RequestId": request_id,
                "HostId": "",
                "HTTPHeaders": {},
                "RetryAttempts": 0,
            },
        },
        "Invoke",
    )


_active: LambdaDispatcher | None = None
_install_lock = threading.Lock()


@contextlib.contextmanager
def dispatching(dispatcher: LambdaDispatcher) -> Iterator[LambdaDispatcher]:
    """moto's Step Functions interpreter invokes Lambda through ``dispatcher`` for the duration.

    It replaces one call, the interpreter's ``lambda_eval_utils._invoke_lambda_function`` (used for
    ``arn:aws:states:::lambda:invoke`` and for a plain function ARN as Resource). moto's backends are process-wide, so only one dispatcher can be active at a time.
    """
    global _active
    import moto
    from moto.stepfunctions.parser.asl.component.state.exec.state_task import lambda_eval_utils

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(
            f"memmy_local.aws.stepfunctions patches moto {MOTO_VERSION}'s interpreter, not {moto.__version__}; "
            "check lambda_eval_utils._invoke_lambda_function and update MOTO_VERSION"
        )
    with _install_lock:
        if _active is not None:
            raise RuntimeError("another LambdaDispatcher is already active in this process")
        original = lambda_eval_utils._invoke_lambda_function

        def invoke_lambda_function(parameters: dict[str, Any], region: str, state_credentials: Any) -> Any:
            return dispatcher.invoke(parameters)

        lambda_eval_utils._invoke_lambda_function = invoke_lambda_function
        _active = dispatcher
    try:
        yield dispatcher
    finally:
        with _install_lock:
            lambda_eval_utils._invoke_lambda_function = original
            _active = None


# ------------------------------------------------------------------------------ States.ALL matching

# Errors that AWS documents as never matched by States.ALL (terminal: no Retry, no Catch).
_NOT_MATCHED_BY_STATES_ALL: Final = frozenset({"States.Runtime", "States.DataLimitExceeded"})


@contextlib.contextmanager
def states_all_as_on_aws() -> Iterator[None]:
    """For the duration, ``States.ALL`` does not match ``States.Runtime`` or ``States.DataLimitExceeded``.

    moto lets ``States.ALL`` in a Retry or Catch match every error; on AWS those two (a JSONPath that finds
    nothing, such as a ResultSelector reading a field the task did not return) always fail the execution.

    Patches ``ErrorEqualsDecl._eval_body`` (moto 5.2.5,
    ``moto/stepfunctions/parser/asl/component/common/error_name/error_equals_decl.py``), which every
    Retrier and Catcher evaluates with the error name on the interpreter's stack: for those two errors
    a ``["States.ALL"]`` answers "no match"; everything else is moto's own evaluation.
    """
    import moto
    from moto.stepfunctions.parser.asl.component.common.error_name.error_equals_decl import ErrorEqualsDecl
    from moto.stepfunctions.parser.asl.component.common.error_name.states_error_name import StatesErrorName

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(f"states_all_as_on_aws patches moto {MOTO_VERSION}, not {moto.__version__}")
    original = ErrorEqualsDecl._eval_body
    states_all = StatesErrorName.from_name("States.ALL")

    def eval_body(self: Any, env: Any) -> None:
        error_name = env.stack[-1]
        if (
            states_all in self.error_names
            and isinstance(error_name, StatesErrorName)
            and error_name.error_name in _NOT_MATCHED_BY_STATES_ALL
        ):
            env.stack.pop()
            env.stack.append(False)
            return
        original(self, env)

    with _install_lock:
        ErrorEqualsDecl._eval_body = eval_body  # type: ignore[method-assign]  # moto's method, patched
    try:
        yield
    finally:
        with _install_lock:
            ErrorEqualsDecl._eval_body = original  # type: ignore[method-assign]
