"""Warm Lambda containers in one process: each with its own copy of Powertools' per-invocation state.

On Lambda each container is its own process; here the containers of every function share one, so the
Powertools attributes that hold request state (the resolvers' current event, a Logger's appended keys,
the Metrics buffers) are made per container by ``isolate_powertools_state``: while a ``Container`` is
active in a thread, those attributes read and write that container's values.
"""

from __future__ import annotations

import contextlib
import copy
import threading
import weakref
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Any

Handler = Callable[[dict[str, Any], Any], Any]

_MISSING: Any = object()


# The container whose invocation is running in this thread (None: code that runs outside any container).
_ACTIVE_CONTAINER: ContextVar[Container | None] = ContextVar("memmy_local_container", default=None)


class Container:
    """One warm "container" of a function: its own copy of the handler module and of Powertools' state.

    A container serves one invocation at a time. While it does, the Powertools attributes that are shared
    by the whole process here, but private to each container on Lambda (see ``isolate_powertools_state``),
    read and write this container's own values.
    """

    def __init__(self, number: int) -> None:
        self.number = number
        self.handler: Handler | None = None
        self.invocations = 0
        self.state: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()
        # Copies of values Powertools shares between instances: id(value) -> (value, this container's copy).
        self.copies: dict[int, tuple[Any, Any]] = {}

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This container's state in effect for the calling thread."""
        token = _ACTIVE_CONTAINER.set(self)
        try:
            yield
        finally:
            _ACTIVE_CONTAINER.reset(token)

    def __repr__(self) -> str:
        return f"Container(number={self.number}, invocations={self.invocations})"


class _ScopedAttribute:
    """A data descriptor: an attribute of a process-wide Powertools object, kept per container.

    Outside any container the value lives where Powertools put it (the instance's ``__dict__``; for a class
    attribute, ``process_value``), so code that runs no container sees no difference. Inside a container,
    the container's own value is used, first made by ``fresh`` from the process's value (with ``fresh``
    None, a container starts without one, as a new Lambda container would).
    """

    def __init__(
        self,
        name: str,
        fresh: Callable[[Any], Any] | None = None,
        *,
        owner: type | None = None,
        process_value: Any = _MISSING,
    ) -> None:
        self.name = name
        self.fresh = fresh
        # Set for a class attribute (``BaseRouter.current_event``): one value per container, whoever asks.
        self.owner = owner
        self.process_value = process_value

    def _process(self, target: Any) -> Any:
        return self.process_value if self.owner is not None else vars(target).get(self.name, _MISSING)

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None and self.owner is None:
            return self
        target = self.owner if self.owner is not None else obj
        container = _ACTIVE_CONTAINER.get()
        if container is None:
            value = self._process(target)
        else:
            values = container.state.setdefault(target, {})
            value = values.get(self.name, _MISSING)
            if value is _MISSING and self.fresh is not None:
                initial = self._process(target)
                if initial is not _MISSING:
                    value = values[self.name] = self.fresh(initial)
        if value is _MISSING:
            raise AttributeError(self.name)
        return value

    def __set__(self, obj: Any, value: Any) -> None:
        target: Any = self.owner if self.owner is not None else obj
        container = _ACTIVE_CONTAINER.get()
        if container is not None:
            container.state.setdefault(target, {})[self.name] = value
        elif self.owner is not None:
            self.process_value = value
        else:
            vars(target)[self.name] = value


class _ScopedValue(_ScopedAttribute):
    """An attribute whose value Powertools shares between instances (``Metrics``' buffers are class-level
    dictionaries every instance holds): a container gets one copy per shared value, whichever instance
    reaches it, as every instance in one Lambda container shares the one value. Assignments set the
    process's value, inside a container too (Powertools only assigns these in ``__init__``)."""

    def __get__(self, obj: Any, objtype: type | None = None) -> Any:
        if obj is None:
            return self
        value = vars(obj).get(self.name, _MISSING)
        container = _ACTIVE_CONTAINER.get()
        if value is _MISSING:
            raise AttributeError(self.name)
        if container is None:
            return value
        copied = container.copies.get(id(value))
        if copied is None:
            # The value is kept alongside its copy, so that its id cannot be reused meanwhile.
            copied = container.copies[id(value)] = (value, self.fresh(value) if self.fresh else value)
        return copied[1]

    def __set__(self, obj: Any, value: Any) -> None:
        vars(obj)[self.name] = value


def _scope_instance_attributes(
    cls: type, fresh: Mapping[str, Callable[[Any], Any]], kind: type[_ScopedAttribute] = _ScopedAttribute
) -> None:
    for name, make in fresh.items():
        if not isinstance(cls.__dict__.get(name), _ScopedAttribute):
            setattr(cls, name, kind(name, make))


def _scope_class_attributes(cls: type, names: tuple[str, ...]) -> None:
    """Class attributes written as ``cls.<name> = ...`` kept per container: a metaclass descriptor takes the
    class-level reads and writes, the same descriptor in the class takes its instances' reads."""
    if all(isinstance(cls.__dict__.get(name), _ScopedAttribute) for name in names):
        return
    slots: dict[str, Any] = {}
    for name in names:
        slots[name] = _ScopedAttribute(name, owner=cls, process_value=cls.__dict__.get(name, _MISSING))
        type.__setattr__(cls, name, slots[name])  # before the metaclass has descriptors of that name
    meta = type(cls)
    cls.__class__ = type(f"ContainerScoped{meta.__name__}", (meta,), slots)


_ISOLATION_LOCK = threading.Lock()
_isolated = False


def isolate_powertools_state() -> None:
    """Keep Powertools' per-invocation state per container (idempotent; no change outside containers).

    On Lambda each container is its own process, so Powertools keeps request state in places one process
    shares here: the resolvers' current event and context are attributes of the ``BaseRouter`` class, a
    resolver's routing context and a router's resolver are set per request or per import, a ``Logger``'s
    appended keys (``function_name``, ``function_request_id``, ``correlation_id``...) live in its
    formatter, shared by every logger of one service, and ``Metrics`` buffers in dictionaries shared by
    every instance. Powertools' ``thread_safe_append_keys`` would not help: ``inject_lambda_context`` and
    ``set_correlation_id`` write the shared keys. Each of these attributes is made per container instead.
    """
    global _isolated
    with _ISOLATION_LOCK:
        if _isolated:
            return
        from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver, BaseRouter, Router
        from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
            AmazonCloudWatchEMFProvider,
        )

        _scope_class_attributes(BaseRouter, ("current_event", "lambda_context"))
        _scope_instance_attributes(ApiGatewayResolver, {"context": dict})
        _scope_instance_attributes(Router, {"api_resolver": lambda resolver: resolver})
        _scope_instance_attributes(LambdaPowertoolsFormatter, {"log_format": dict})
        # Every Metrics instance's provider holds the same class-level buffers; dimension_sets is its own.
        _scope_instance_attributes(
            AmazonCloudWatchEMFProvider,
            {"metric_set": copy.deepcopy, "dimension_set": dict, "metadata_set": dict},
            _ScopedValue,
        )
        _scope_instance_attributes(AmazonCloudWatchEMFProvider, {"dimension_sets": copy.deepcopy})
        _isolated = True
