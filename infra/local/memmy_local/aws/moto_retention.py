"""What moto keeps in the local stack's process although nothing reads it, let go (moto 5.2.5): no model
instance tracking for any service, and each state machine's finished executions kept in a bounded number
(docs/architecture.md, "Local stack"; measured under ``make soak``, docs/load-test.md)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any, Final

from .dynamodb import MOTO_VERSION

__all__ = ["KEPT_FINISHED_EXECUTIONS", "bounded_retention"]

KEPT_FINISHED_EXECUTIONS: Final = 100
"""Finished executions each state machine keeps (the most recent ones); running ones are all kept."""

_install_lock = threading.Lock()
_installed = False


def _check_version() -> None:
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(
            f"memmy_local.aws.moto_retention patches moto {MOTO_VERSION}, not {moto.__version__}: check "
            "BaseModel.__new__ and StepFunctionsParserBackend.start_execution, then update MOTO_VERSION"
        )


def _untrack_models() -> Any:
    """``BaseModel.__new__`` without the tracking; returns the undo."""
    from moto.core.common_models import BaseModel

    original = vars(BaseModel)["__new__"]

    def untracked_new(cls: type[BaseModel], *args: Any, **kwargs: Any) -> Any:
        return super(BaseModel, cls).__new__(cls)

    BaseModel.__new__ = staticmethod(untracked_new)  # type: ignore[method-assign]
    return lambda: setattr(BaseModel, "__new__", original)


def prune_finished(executions: list[Any], keep: int) -> None:
    """Drop, in place, all but the ``keep`` most recently started of the finished ``executions``."""
    from moto.stepfunctions.parser.api import ExecutionStatus

    finished = [e for e in executions if e.exec_status not in (None, ExecutionStatus.RUNNING)]
    dropped = {id(e) for e in finished[: max(0, len(finished) - keep)]}
    if dropped:
        executions[:] = [e for e in executions if id(e) not in dropped]


def _bound_executions() -> Any:
    """``start_execution`` of moto's executing backend prunes the machine's finished executions after
    each start, and empties the interpreter's list of the threads it started; returns the undo. Starts
    run one at a time, so that no start's append is lost to another start's pruning."""
    from moto.stepfunctions.parser.models import StepFunctionsParserBackend
    from moto.stepfunctions.parser.utils import TMP_THREADS

    original = StepFunctionsParserBackend.start_execution
    starting = threading.Lock()

    def start_execution(self: Any, state_machine_arn: str, *args: Any, **kwargs: Any) -> Any:
        with starting:
            execution = original(self, state_machine_arn, *args, **kwargs)
            prune_finished(
                self.describe_state_machine(state_machine_arn).executions, KEPT_FINISHED_EXECUTIONS
            )
            TMP_THREADS.clear()  # the interpreter appends every thread it starts; nothing reads the list
        return execution

    StepFunctionsParserBackend.start_execution = start_execution  # type: ignore[method-assign]
    return lambda: setattr(StepFunctionsParserBackend, "start_execution", original)


@contextlib.contextmanager
def bounded_retention() -> Iterator[None]:
    """Both patches (see the module's docstring) for the duration; one holder at a time."""
    global _installed
    _check_version()
    with _install_lock:
        if _installed:
            raise RuntimeError("bounded_retention is already active in this process")
        undo = [_untrack_models(), _bound_executions()]
        _installed = True
    try:
        yield
    finally:
        with _install_lock:
            for put_back in reversed(undo):
                put_back()
            _installed = False
