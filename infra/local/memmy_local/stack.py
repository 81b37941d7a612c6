"""The whole service in one process, without an AWS account or Docker: ``LocalStack`` starts each part (the
dev identity provider, moto provisioned from ``template.yaml``, the MemOS emulator, the gateway, the event
runners, the control endpoint) and ``stop()`` undoes them in reverse order, the process environment too.
What each part does and what a ``data_dir`` keeps: docs/architecture.md, "Local stack".
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from . import stack_parts as parts
from . import tokens
from .memos_emulator.server import MemosEmulator
from .stack_config import StackConfig, StackStartError
from .template import load_template, template_path

if TYPE_CHECKING:  # imported when the stack starts: `memmy-local token` and --help do not pay for them
    from .aws.stepfunctions import LambdaDispatcher
    from .control import ControlServer
    from .gateway.server import Gateway
    from .identity.provider import IdentityProvider
    from .lambdas.runners import ScheduleRunner

__all__ = ["LocalStack", "StackConfig", "StackStartError"]

_Part = TypeVar("_Part")


class LocalStack:
    """moto + the MemOS emulator + the gateway; a context manager. Only one may run per process."""

    def __init__(self, config: StackConfig | None = None) -> None:
        self.config = config or StackConfig()
        self.refs: dict[str, str] = {}
        self.function_environments: dict[str, dict[str, str]] = {}
        self.template: dict[str, Any] = {}
        self._exit: contextlib.ExitStack | None = None
        self._moto_url = ""
        self._emulator: MemosEmulator | None = None
        self._gateway: Gateway | None = None
        self._schedules: ScheduleRunner | None = None
        self._control: ControlServer | None = None
        self._dispatcher: LambdaDispatcher | None = None
        self._idp: IdentityProvider | None = None
        self.issuer = ""

    # -- public view -----------------------------------------------------------------------------

    @property
    def api_url(self) -> str:
        """The gateway's root URL (the HTTP API's ``$default`` stage)."""
        return self._require(self._gateway).url

    @property
    def memos_url(self) -> str:
        """The emulator's root URL (``/_emulator/state`` lives here); see ``memos_api_url`` for MemOS's base."""
        return self._require(self._emulator).root_url

    @property
    def memos_api_url(self) -> str:
        """The MemOS API base URL the functions are configured with."""
        return self._require(self._emulator).base_url

    @property
    def moto_url(self) -> str:
        """moto's endpoint (every AWS service)."""
        return self._require(self._moto_url)

    @property
    def data_dir(self) -> Path | None:
        return self.config.data_dir

    @property
    def idp_url(self) -> str:
        """The dev identity provider's root URL (its issuer unless ``StackConfig.issuer`` is set)."""
        return self._require(self._idp).url

    @property
    def control_url(self) -> str:
        """The control endpoint's root URL (``memmy_local.control``)."""
        return self._require(self._control).url

    @property
    def dispatcher(self) -> LambdaDispatcher:
        """The ``LambdaDispatcher`` of the state machines' Lambda tasks (``override`` to stand in)."""
        return self._require(self._dispatcher)

    @property
    def scheduled_functions(self) -> list[str]:
        """Logical ids of the template's functions with a ``Schedule``/``ScheduleV2`` event."""
        return self._require(self._schedules).functions

    def run_scheduled(self, logical_id: str = "ReconcileFunction") -> Any:
        """Invoke a scheduled function once, now, with its schedule's event, and wait for it: what the
        handler returned, or its exception raised."""
        return self._require(self._schedules).run(logical_id)

    def _require(self, value: _Part | None) -> _Part:
        if not value:
            raise RuntimeError("the local stack is not running")
        return value

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> LocalStack:
        """Start everything; on any failure, what was already started is stopped again."""
        if self._exit is not None:
            raise RuntimeError("the local stack is already running")
        with contextlib.ExitStack() as undo:
            self._start(undo)
            self._exit = undo.pop_all()
        return self

    def stop(self) -> None:
        """Stop everything in reverse order; keep the DynamoDB items first when there is a data dir."""
        exit_stack, self._exit = self._exit, None
        if exit_stack is not None:
            exit_stack.close()
        self._gateway = self._emulator = self._schedules = self._control = self._dispatcher = self._idp = None
        self._moto_url = self.issuer = ""

    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _start(self, undo: contextlib.ExitStack) -> None:
        config = self.config
        parts.ensure_ports_free(config)
        if config.data_dir is not None:
            config.data_dir.mkdir(parents=True, exist_ok=True)
        template_file = config.template_path or template_path()
        self.template = load_template(template_file)
        key = tokens.load_signing_key(tokens.signing_key_path(config.data_dir))
        idp = self._idp = parts.start_identity_provider(undo, config, key)
        self.issuer = idp.issuer
        moto_url = self._moto_url = parts.start_moto(undo, config)
        self._emulator = parts.start_emulator(undo, config)
        deployment = parts.provision_template(
            undo,
            config,
            template_file,
            self.template,
            moto_url=moto_url,
            memos_url=self._emulator.base_url,
            idp=idp,
        )
        self.refs, self.function_environments = deployment.refs, deployment.environments
        gateway = self._gateway = parts.start_gateway(undo, config, deployment, idp)
        parts.point_mcp_at_gateway(undo, deployment, gateway, config)
        pool = parts.function_pool(config, deployment, gateway)
        parts.start_queue_runners(undo, config, deployment, pool)
        self._dispatcher = parts.dispatch_state_machine_tasks(undo, config, deployment, pool)
        self._schedules = parts.start_schedules(undo, config, deployment, pool)
        self._control = parts.start_control(
            undo, config, self._schedules, api_url=gateway.url, moto_url=moto_url, idp=idp
        )
