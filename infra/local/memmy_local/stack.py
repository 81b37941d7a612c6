"""The whole service on one machine, in one process, without an AWS account or Docker.

``LocalStack`` starts moto in server mode on loopback and provisions it from ``template.yaml``, starts the
MemOS emulator, points the handlers' environment at both, and serves the template's routes through the
local gateway. State machine executions run the real ASL in moto, their Lambda tasks dispatched to the
handlers in-process (``memmy_local.stepfunctions``); moto's DynamoDB runs with ``memmy_local.dynamodb``'s
patches (memory that does not grow with transactions, queries that read one partition), and keeps no
more than it must (``memmy_local.moto_retention``); scheduled
functions run on a timer (``StackConfig.schedule_interval``) and on demand (``run_scheduled``, the control endpoint behind
``memmy-local reconcile``, ``memmy_local.control``); the dev identity provider (``memmy_local.identity_provider``)
starts first, and its URL is the issuer unless ``StackConfig.issuer`` is set. ``stop()`` undoes everything in reverse order, the
process environment included.

Each start is a clean slate unless ``data_dir`` is given: then the emulator's SQLite file and the dev
signing key live there, and the DynamoDB items (moto keeps nothing) are dumped there on stop and loaded
again on start (``memmy_local.dynamodb_dump``). S3 objects, queue messages and state machine executions are
not kept. The process environment it sets and puts back is built in ``memmy_local.environment``, moto's
process-wide configuration in ``memmy_local.moto_config``.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .dynamodb_dump import dump_tables, dynamodb_client, restore_tables, table_names
from .environment import (
    fake_aws_environment,
    function_environments,
    merged_environment,
    restore_environment,
    set_environment,
)
from .memos_emulator.server import DEFAULT_API_KEY, EmulatorConfig, MemosEmulator
from .moto_config import configure_moto, moto_config_snapshot, restore_moto_config
from .template import load_template, template_path

log = logging.getLogger("memmy_local.stack")

MEMOS_PROJECT = "memmy"
CORE_PACKAGE = "memmy_kb"
DYNAMODB_DUMP_NAME = "dynamodb.json"
MEMOS_DB_NAME = "memos.sqlite3"


@dataclass
class StackConfig:
    """Ports (0 = any free port), where state is kept, and how the emulator behaves."""

    gateway_port: int = 8080
    memos_port: int = 8090
    moto_port: int = 5000
    host: str = "127.0.0.1"
    data_dir: Path | None = None
    memos_processing_delay: float = 1.0
    memos_api_key: str = DEFAULT_API_KEY
    # MemOS projects the emulator holds, each with its own key (``<memos_api_key>-p<n>``) and KB quota,
    # and the stack's backends in its MemOS secret (docs/memos.md, "Backends"); 1: one key, as deployed.
    memos_projects: int = 1
    memos_kb_quota: int | None = None
    template_path: Path | None = None
    repo_root: Path | None = None
    region: str = "us-east-1"
    issuer: str | None = None
    audience: str | None = None
    # Seconds between two runs of each scheduled function (the template's rates are minutes); 0: never,
    # only on demand (run_scheduled, memmy-local reconcile).
    schedule_interval: float = 60.0
    # The control endpoint (memmy_local.control) on `host`; 0 = any free port, recorded in the dev home.
    control_port: int = 0
    # The dev identity provider (memmy_local.identity_provider): its URL is the issuer unless `issuer` is set.
    idp_port: int = 8070
    access_token_ttl: int = 3600
    # State machine Lambda tasks: function name or logical id -> a callable used instead of the handler.
    task_overrides: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)


class StackStartError(RuntimeError):
    """The stack cannot start as configured (a port in use); the message says what to change."""


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
        self._gateway: Any = None
        self._schedules: Any = None
        self._control: Any = None
        self._dispatcher: Any = None
        self._idp: Any = None
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
        return str(self._require(self._idp).url)

    @property
    def control_url(self) -> str:
        """The control endpoint's root URL (``memmy_local.control``)."""
        return str(self._require(self._control).url)

    @property
    def dispatcher(self) -> Any:
        """The ``LambdaDispatcher`` of the state machines' Lambda tasks (``override`` to stand in)."""
        return self._require(self._dispatcher)

    @property
    def scheduled_functions(self) -> list[str]:
        """Logical ids of the template's functions with a ``Schedule``/``ScheduleV2`` event."""
        functions: list[str] = self._require(self._schedules).functions
        return functions

    def run_scheduled(self, logical_id: str = "ReconcileFunction") -> Any:
        """Invoke a scheduled function once, now, with its schedule's event, and wait for it: what the
        handler returned, or its exception raised."""
        return self._require(self._schedules).run(logical_id)

    def _require(self, value: Any) -> Any:
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
        # Imported here so that `memmy-local token` and the CLI's help do not pay for moto and boto3.
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer

        from . import tokens
        from .authorizer import JwtAuthorizer
        from .control import ControlServer
        from .dynamodb import local_dynamodb
        from .gateway import Gateway, GatewayConfig
        from .identity_provider import IdentityProvider
        from .lambdas import FunctionPool
        from .moto_retention import bounded_retention
        from .provision import LOCAL_ACCOUNT_ID, provision
        from .provision_storage import memos_backends_secret, memos_project_keys
        from .runners import ScheduleRunner, schedule_sources, start_sqs_runners
        from .stepfunctions import LambdaDispatcher, dispatching, states_all_as_on_aws

        config = self.config
        for what, port in (
            ("gateway", config.gateway_port),
            ("MemOS", config.memos_port),
            ("moto", config.moto_port),
            ("control", config.control_port),
            ("identity provider", config.idp_port),
        ):
            _ensure_port_free(config.host, port, what)
        if config.data_dir is not None:
            config.data_dir.mkdir(parents=True, exist_ok=True)
        template_file = config.template_path or template_path()
        template = load_template(template_file)
        self.template = template
        audience = config.audience or tokens.DEFAULT_AUDIENCE
        signing_key = tokens.load_signing_key(tokens.signing_key_path(config.data_dir))
        # The sign-in provider first: its URL is the issuer the template's JwtIssuer and the gateway get.
        idp = IdentityProvider(
            signing_key,
            host=config.host,
            port=config.idp_port,
            issuer=config.issuer,
            audience=audience,
            access_token_ttl=config.access_token_ttl,
            state_dir=config.data_dir,
        )
        undo.callback(idp.stop)
        idp.start()
        self._idp = idp
        issuer = self.issuer = idp.issuer

        undo.callback(restore_environment, set_environment(fake_aws_environment(config.region)))
        if not logging.getLogger("werkzeug").level:
            # moto's server would otherwise log every AWS call the handlers make.
            logging.getLogger("werkzeug").setLevel(logging.WARNING)
        # moto's DynamoDB keeps only the table's items and a Query reads only its partition
        # (memmy_local.dynamodb); otherwise every transaction's copy of the table stayed in memory.
        undo.enter_context(local_dynamodb())
        # Nor every S3 object, SQS message and finished execution (memmy_local.moto_retention).
        undo.enter_context(bounded_retention())
        moto = ThreadedMotoServer(ip_address=config.host, port=config.moto_port, verbose=False)
        moto.start()
        undo.callback(moto.stop)
        moto_port = moto.get_host_and_port()[1]
        self._moto_url = f"http://{config.host}:{moto_port}"
        # moto reads MOTO_PORT when its Step Functions interpreter makes a call, not at start; setting it
        # before the first request is enough, and binding port 0 first avoids a free-port race.
        undo.callback(
            restore_environment,
            set_environment({"MOTO_PORT": str(moto_port), "AWS_ENDPOINT_URL": self._moto_url}),
        )
        # moto's config is process-wide and outlives the server: put it back as it was on stop, so that
        # code using moto in-process later (tests) does not inherit Step Functions execution.
        undo.callback(restore_moto_config, moto_config_snapshot())
        configure_moto(self._moto_url)
        _forget_containers()
        undo.callback(_forget_containers)

        emulator = MemosEmulator(
            EmulatorConfig(
                host=config.host,
                port=config.memos_port,
                api_keys=memos_project_keys(config.memos_api_key, config.memos_projects, MEMOS_PROJECT),
                db_path=config.data_dir / MEMOS_DB_NAME if config.data_dir else None,
                processing_delay=config.memos_processing_delay,
                kb_quota=config.memos_kb_quota,
            )
        )
        emulator.start()
        undo.callback(emulator.stop)
        self._emulator = emulator

        resources = provision(
            template,
            endpoint_url=self._moto_url,
            region=config.region,
            memos_api_key=config.memos_api_key,
            memos_secret=memos_backends_secret(
                memos_project_keys(config.memos_api_key, config.memos_projects, MEMOS_PROJECT),
                emulator.base_url,
                config.memos_kb_quota,
            ),
            parameters={"JwtIssuer": issuer, "JwtAudience": audience, "MemosBaseUrl": emulator.base_url},
            template_dir=template_file.parent,
        )
        self.refs = resources.refs
        tables = table_names(template, self.refs)
        if config.data_dir is not None:
            dump = config.data_dir / DYNAMODB_DUMP_NAME
            dynamodb = dynamodb_client(self._moto_url, config.region)
            restore_tables(dynamodb, tables, dump)
            undo.callback(dump_tables, dynamodb, tables, dump)

        self.function_environments = function_environments(template, self.refs)
        undo.callback(restore_environment, set_environment(merged_environment(self.function_environments)))

        gateway = Gateway(
            GatewayConfig(
                template_path=template_file,
                authorizer=JwtAuthorizer(signing_key, issuer, audience),
                repo_root=config.repo_root,
                host=config.host,
                port=config.gateway_port,
                refs=self.refs,
                environments=self.function_environments,
                region=config.region,
                account_id=LOCAL_ACCOUNT_ID,
            )
        )
        undo.callback(gateway.stop)
        gateway.start()
        self._gateway = gateway

        # One warm function per logical id, shared by the runners below (the gateway's included).
        repo_root = config.repo_root or template_file.parent
        pool = FunctionPool(
            template,
            self.refs,
            self.function_environments,
            repo_root=repo_root,
            region=config.region,
            account_id=LOCAL_ACCOUNT_ID,
            loaded=gateway.functions,
        )

        # S3 -> SQS -> ingest: the event source mappings' part, run in-process (memmy_local.runners).
        for runner in start_sqs_runners(
            template,
            self.refs,
            self.function_environments,
            repo_root=repo_root,
            endpoint_url=self._moto_url,
            region=config.region,
            account_id=LOCAL_ACCOUNT_ID,
            pool=pool,
        ):
            undo.callback(runner.stop)

        # Step Functions: moto runs the ASL; its Lambda tasks call the handlers here, in this process.
        dispatcher = LambdaDispatcher.for_template(template, self.refs, pool.get, config.task_overrides)
        undo.enter_context(dispatching(dispatcher))
        undo.enter_context(states_all_as_on_aws())
        self._dispatcher = dispatcher

        # Schedules: moto never fires them.
        schedules = ScheduleRunner(
            schedule_sources(template, self.refs),
            pool,
            region=config.region,
            account_id=LOCAL_ACCOUNT_ID,
            interval=config.schedule_interval,
        )
        undo.callback(schedules.stop)
        schedules.start()
        self._schedules = schedules

        control = ControlServer(
            schedules.run, lambda: schedules.functions, host=config.host, port=config.control_port
        )
        undo.callback(control.stop)
        control.start(
            tokens.dev_home(config.data_dir),
            api_url=gateway.url,
            moto_url=self._moto_url,
            issuer=issuer,
            idp_url=idp.url,
        )
        self._control = control


def _ensure_port_free(host: str, port: int, what: str) -> None:
    """Fail fast and clearly: moto's server thread would otherwise hang its starter on a taken port."""
    if port == 0:
        return
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as err:
            raise StackStartError(
                f"the {what} port {port} on {host} is not available ({err.strerror})"
            ) from err


def _forget_containers() -> None:
    """Drop what a previous stack's "containers" cached in this process: clients bound to its ports.

    Like new Lambda containers: the core layer's composition root forgets every client, adapter and the
    settings (``reset_composition``, which clears Powertools Parameters' caches too). Nothing is imported
    for it: before any handler ran there is nothing to forget.
    """
    composition = sys.modules.get(f"{CORE_PACKAGE}.composition")
    if composition is not None:
        composition.reset_composition()

