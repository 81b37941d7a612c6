"""The template's functions as local Lambdas (``LocalFunction``): a small pool of warm containers per
function, each serving one invocation at a time with its own copy of the handler module and of
Powertools' request state; ``FunctionPool`` holds the one ``LocalFunction`` per template function that the
stack's parts share (docs/architecture.md, "Local stack")."""

from __future__ import annotations

import functools
import itertools
import logging
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from memmy_local.template_intrinsics import UnresolvableValueError, resolve_intrinsics

from .containers import Container, Handler, isolate_powertools_state
from .handlers import import_module_file, load_function_module

log = logging.getLogger("memmy_local.lambdas")

DEFAULT_ACCOUNT_ID = "123456789012"
DEFAULT_REGION = "us-east-1"
DEFAULT_MAX_CONTAINERS = 4


@dataclass
class LambdaContext:
    """The attributes and method of the Python runtime's context object that handlers use."""

    function_name: str
    memory_limit_in_mb: int
    invoked_function_arn: str
    aws_request_id: str
    log_group_name: str
    log_stream_name: str
    deadline: float
    function_version: str = "$LATEST"
    identity: Any = None
    client_context: Any = None

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before the function's configured timeout."""
        return max(0, int((self.deadline - time.monotonic()) * 1000))


class FunctionNotLoadedError(RuntimeError):
    """The function's module could not be imported (on Lambda: an init error)."""


@dataclass
class LocalFunction:
    """One template function as a pool of warm Lambda containers, each serving one invocation at a time.

    As API Gateway and Lambda do, concurrent invocations run concurrently, each in its own container: the
    first is ``handler`` (its module is the function's module), the others are started on demand, up to
    ``max_containers``, each with its own copy of the handler module (``spawn``) and its own Powertools
    state (``isolate_powertools_state``). Beyond that, an invocation waits for a container to be free (on
    Lambda it would be throttled). Without ``spawn`` (a handler given as is) there is one container.
    Timeouts are reported by the context's ``get_remaining_time_in_millis`` but not enforced.
    """

    logical_id: str
    function_name: str
    code_uri: str
    handler_spec: str
    memory_mb: int
    timeout_s: float
    region: str = DEFAULT_REGION
    account_id: str = DEFAULT_ACCOUNT_ID
    handler: Handler | None = None
    load_error: str | None = None
    # Imports another copy of the handler's module, for one more container; called in that container.
    spawn: Callable[[], Handler] | None = field(default=None, repr=False)
    max_containers: int = DEFAULT_MAX_CONTAINERS
    _containers: list[Container] = field(default_factory=list, repr=False)
    _idle: list[Container] = field(default_factory=list, repr=False)
    _starting: int = field(default=0, repr=False)
    _started: int = field(default=0, repr=False)
    _canonical_taken: bool = field(default=False, repr=False)
    _available: threading.Condition = field(default_factory=threading.Condition, repr=False)

    @property
    def containers(self) -> tuple[Container, ...]:
        """The containers started so far, in order."""
        with self._available:
            return tuple(self._containers)

    def context(self, request_id: str) -> LambdaContext:
        """A fresh context for one invocation."""
        day = datetime.now(tz=UTC).strftime("%Y/%m/%d")
        return LambdaContext(
            function_name=self.function_name,
            memory_limit_in_mb=self.memory_mb,
            invoked_function_arn=f"arn:aws:lambda:{self.region}:{self.account_id}:function:{self.function_name}",
            aws_request_id=request_id,
            log_group_name=f"/aws/lambda/{self.function_name}",
            log_stream_name=f"{day}/[$LATEST]{uuid.uuid4().hex}",
            deadline=time.monotonic() + self.timeout_s,
        )

    def invoke(self, event: Any, request_id: str | None = None) -> Any:
        """Run the handler in a free container with ``event`` and a fresh context; its exceptions propagate.

        Thread-safe: concurrent calls run in different containers, one call per container at a time.
        """
        if self.handler is None:
            raise FunctionNotLoadedError(f"{self.logical_id} was not loaded: {self.load_error}")
        container = self._acquire()
        try:
            with container.active():
                assert container.handler is not None
                return container.handler(event, self.context(request_id or str(uuid.uuid4())))
        finally:
            with self._available:
                container.invocations += 1
                self._idle.append(container)
                self._available.notify()

    def _acquire(self) -> Container:
        """A free container: an idle one (the most recently used), else a new one below the cap, else wait."""
        capacity = max(1, self.max_containers) if self.spawn is not None else 1
        with self._available:
            while not self._idle:
                if len(self._containers) + self._starting < capacity:
                    self._starting += 1
                    self._started += 1
                    number = self._started
                    # The first container runs the function's own module; the others, copies of it.
                    canonical = not self._canonical_taken
                    self._canonical_taken = True
                    break
                self._available.wait()
            else:
                return self._idle.pop()
        # Started outside the lock: the other containers go on serving meanwhile.
        container: Container | None = None
        try:
            container = self._start(number, canonical)
            return container
        finally:
            with self._available:
                self._starting -= 1
                if container is not None:
                    self._containers.append(container)
                else:
                    self._canonical_taken = self._canonical_taken and not canonical
                    self._available.notify()

    def _start(self, number: int, canonical: bool) -> Container:
        isolate_powertools_state()
        container = Container(number)
        if canonical:
            container.handler = self.handler
        else:
            assert self.spawn is not None
            try:
                with container.active():
                    # The copy's module-level code runs in the new container, as a Lambda init would.
                    container.handler = self.spawn()
            except Exception as err:
                # On Lambda: the new container's init error, that invocation's failure.
                raise FunctionNotLoadedError(
                    f"{self.logical_id}: container {number} could not load: {type(err).__name__}: {err}"
                ) from err
        return container


def _function_property(template: Mapping[str, Any], logical_id: str, name: str, default: Any) -> Any:
    properties = template["Resources"][logical_id].get("Properties") or {}
    globals_ = (template.get("Globals") or {}).get("Function") or {}
    return properties.get(name, globals_.get(name, default))


def describe_function(
    template: Mapping[str, Any],
    logical_id: str,
    refs: Mapping[str, str],
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
) -> LocalFunction:
    """A function's name, code location, memory and timeout from the template (Globals applied)."""
    try:
        name = str(
            resolve_intrinsics(_function_property(template, logical_id, "FunctionName", logical_id), refs)
        )
    except UnresolvableValueError:
        name = logical_id
    return LocalFunction(
        logical_id=logical_id,
        function_name=name,
        code_uri=str(_function_property(template, logical_id, "CodeUri", "")),
        handler_spec=str(_function_property(template, logical_id, "Handler", "")),
        memory_mb=int(_function_property(template, logical_id, "MemorySize", 128)),
        timeout_s=float(_function_property(template, logical_id, "Timeout", 3)),
        region=region,
        account_id=account_id,
    )


# Imports run one at a time: each overlays its function's environment on os.environ while it runs.
_IMPORT_LOCK = threading.Lock()
_copy_numbers = itertools.count(2)


def _handler_module(
    repo_root: Path, function: LocalFunction, environment: Mapping[str, str]
) -> tuple[ModuleType, str]:
    """The function's module (imported once per process) and the name of its handler attribute."""
    module_path, _, attribute = function.handler_spec.rpartition(".")
    if not module_path or not attribute:
        raise ValueError(
            f"{function.logical_id}: Handler {function.handler_spec!r} is not <module>.<function>"
        )
    with _IMPORT_LOCK:
        module = load_function_module(function.code_uri, function.handler_spec, repo_root, environment)
    return module, attribute


def _handler_of(module: ModuleType, attribute: str, logical_id: str) -> Handler:
    handler: Handler | None = getattr(module, attribute, None)
    if not callable(handler):
        raise AttributeError(f"{logical_id}: {module.__file__} has no callable {attribute!r}")
    return handler


def load_handler(repo_root: Path, function: LocalFunction, environment: Mapping[str, str]) -> Handler:
    """Import ``<repo_root>/<CodeUri>/<module>.py`` (once per process) and return its handler."""
    return _handler_of(*_handler_module(repo_root, function, environment), function.logical_id)


def copy_handler(
    module: ModuleType, attribute: str, environment: Mapping[str, str], logical_id: str
) -> Handler:
    """The handler of a fresh copy of ``module``, imported under a name of its own: another container's.

    The copy has its own module globals (a resolver, a batch processor); modules it imports (the core
    layer, Powertools) are shared with the other containers, hence ``isolate_powertools_state``.
    """
    path = Path(module.__file__ or "")
    with _IMPORT_LOCK:
        copied = import_module_file(f"{module.__name__}__container{next(_copy_numbers)}", path, environment)
    return _handler_of(copied, attribute, logical_id)


def load_function(
    template: Mapping[str, Any],
    logical_id: str,
    *,
    repo_root: Path,
    refs: Mapping[str, str],
    environment: Mapping[str, str] | None = None,
    region: str = DEFAULT_REGION,
    account_id: str = DEFAULT_ACCOUNT_ID,
    max_containers: int = DEFAULT_MAX_CONTAINERS,
) -> LocalFunction:
    """Describe and import one template function (for the gateway and for event runners).

    An import failure does not raise: like a Lambda whose init fails, the function is returned with
    ``load_error`` set, the error is logged, and each invocation fails. Further containers import their
    own copies of the module when concurrent invocations need them (``LocalFunction``).
    """
    function = describe_function(template, logical_id, refs, region, account_id)
    function.max_containers = max_containers
    variables = dict(environment or {})
    try:
        module, attribute = _handler_module(repo_root, function, variables)
        function.handler = _handler_of(module, attribute, logical_id)
        function.spawn = functools.partial(copy_handler, module, attribute, variables, logical_id)
    except Exception as err:
        function.load_error = f"{type(err).__name__}: {err}"
        log.error("cannot load %s (%s): %s", logical_id, function.handler_spec, function.load_error)
        log.debug("%s", traceback.format_exc())
    return function


class FunctionPool:
    """One ``LocalFunction`` per template function, loaded on first use and shared by the stack's parts
    (the gateway's functions can be handed in as ``loaded``)."""

    def __init__(
        self,
        template: Mapping[str, Any],
        refs: Mapping[str, str],
        environments: Mapping[str, Mapping[str, str]],
        *,
        repo_root: Path,
        region: str,
        account_id: str,
        loaded: Mapping[str, LocalFunction] | None = None,
    ) -> None:
        self.template = template
        self._refs = refs
        self._environments = environments
        self._repo_root = repo_root
        self._region = region
        self._account_id = account_id
        self._functions: dict[str, LocalFunction] = dict(loaded or {})
        self._lock = threading.Lock()

    def get(self, logical_id: str) -> LocalFunction:
        """The function, imported the first time (an import failure is logged; its invocations fail)."""
        with self._lock:
            function = self._functions.get(logical_id)
            if function is None:
                function = self._functions[logical_id] = load_function(
                    self.template,
                    logical_id,
                    repo_root=self._repo_root,
                    refs=self._refs,
                    environment=self._environments.get(logical_id, {}),
                    region=self._region,
                    account_id=self._account_id,
                )
            return function
