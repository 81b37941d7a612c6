"""What moto keeps in the local stack's process although nothing reads it, let go (moto 5.2.5).

Under ``make soak`` (60 users, ten minutes) the stack's memory rose about 7 MiB a minute for as long as
the load ran. Counting what its heap held after 90 s at 60 users: every S3 object ever stored (about
4.5 KB each with its ACL, grant and grantee, its bytes included: moto disposes of a deleted object's
buffer only at a reset), every SQS message ever sent (1.2 KB), and every Step Functions execution ever
started (28 KB: its own copy of the state machine, its worker, its event history). Two patches, installed
together by ``bounded_retention()`` for as long as the local stack runs:

1. **No instance tracking, for any service.** moto's ``BaseModel.__new__`` (``moto/core/common_models.py``)
   appends every model instance to its class's ``instances_tracked`` list for the ``/moto-api/data.json``
   dashboard, and only a reset empties those lists. ``memmy_local.dynamodb`` stops that for DynamoDB's
   models (and in-process tests too); this stops it for every model of every service while the stack
   runs: a deleted S3 object or a consumed message is then freed like any other object (a deleted S3
   object's buffer is closed when it is collected). The dashboard lists no instances.
2. **Finished executions kept in a bounded number.** moto keeps every execution of a state machine for as
   long as the process lives; AWS keeps a closed execution 90 days, in its own storage. Here each state
   machine keeps its running executions and its ``KEPT_FINISHED_EXECUTIONS`` most recent finished ones;
   an older one is gone from ``ListExecutions`` and ``DescribeExecution``, and its name can be started
   again (on AWS, not for 90 days). The service names a cleanup's execution after the cleanup only so
   that a repeated start of a running one is harmless (``memmy_kb.adapters.stepfunctions``); a cleanup
   that ran again finds its outbox item gone and ends. The interpreter (ported from LocalStack) also
   appends every thread it starts, four per execution here, to a module-level list that nothing reads
   and nothing empties (``TMP_THREADS``, ``moto/stepfunctions/parser/utils.py``): each start empties it.
   A finished thread there kept its event, condition and locks for good, about 2 KB each.

``tests/integration/test_local_moto_retention.py`` checks both.
"""

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
            f"memmy_local.moto_retention patches moto {MOTO_VERSION}, not {moto.__version__}: check "
            "BaseModel.__new__ and StepFunctionsParserBackend.start_execution, then update MOTO_VERSION"
        )


def _untrack_models() -> Any:
    """``BaseModel.__new__`` without the tracking; returns the undo."""
    from moto.core.common_models import BaseModel

    original = vars(BaseModel)["__new__"]

    def untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
        return super(BaseModel, cls).__new__(cls)

    BaseModel.__new__ = staticmethod(untracked_new)  # type: ignore[assignment]
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
            TMP_THREADS.clear()  # nothing reads it (see the module's docstring)
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
