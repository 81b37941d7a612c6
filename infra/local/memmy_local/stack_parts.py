"""The local stack's parts, one function each: it starts its part as the ``StackConfig`` says and puts its
undoing on ``undo``; ``LocalStack`` calls them in order (docs/architecture.md, "Local stack"). Each imports
its part when called, so ``memmy-local token`` and ``--help`` do not pay for moto, boto3 or the handlers."""

from __future__ import annotations

import logging
import socket
import sys
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import tokens
from .aws.dynamodb_dump import dump_tables, dynamodb_client, restore_tables, table_names
from .aws.moto_config import configure_moto, moto_config_snapshot, restore_moto_config
from .lambdas.environment import (
    fake_aws_environment,
    function_environments,
    merged_environment,
    restore_environment,
    set_environment,
)
from .memos_emulator.config import EmulatorConfig
from .memos_emulator.server import MemosEmulator
from .stack_config import StackConfig, StackStartError

if TYPE_CHECKING:
    from .aws.stepfunctions import LambdaDispatcher
    from .control import ControlServer
    from .gateway.server import Gateway
    from .identity.provider import IdentityProvider
    from .lambdas.functions import FunctionPool
    from .lambdas.runners import ScheduleRunner

MEMOS_PROJECT = "memmy"
CORE_PACKAGE = "memmy_kb"
DYNAMODB_DUMP_NAME = "dynamodb.json"
MEMOS_DB_NAME = "memos.sqlite3"


@dataclass(frozen=True)
class Deployment:
    """The template as provisioned on moto: what the gateway and the runners run the functions with."""

    template: dict[str, Any]
    template_file: Path
    refs: dict[str, str]
    environments: dict[str, dict[str, str]]
    moto_url: str


def ensure_ports_free(config: StackConfig) -> None:
    """Fail fast and clearly: moto's server thread would otherwise hang its starter on a taken port."""
    for what, option, port in (
        ("gateway", "--port", config.gateway_port),
        ("MemOS", "--memos-port", config.memos_port),
        ("moto", "--moto-port", config.moto_port),
        ("control", "--control-port", config.control_port),
        ("identity provider", "--idp-port", config.idp_port),
    ):
        if port == 0:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((config.host, port))
            except OSError as err:
                raise StackStartError(
                    f"the {what} port {port} on {config.host} is not available ({err.strerror})", option, port
                ) from err


def start_identity_provider(undo: ExitStack, config: StackConfig, key: tokens.SigningKey) -> IdentityProvider:
    """The sign-in provider, first: its URL is the issuer the template's JwtIssuer and the gateway get.
    MCP clients' tokens are for the API's ``/mcp``: known here unless the API's port is 0 (any), then
    ``start_gateway`` tells the provider once the gateway listens."""
    from .identity.provider import IdentityProvider

    idp = IdentityProvider(
        key,
        host=config.host,
        port=config.idp_port,
        issuer=config.issuer,
        audience=config.audience or tokens.DEFAULT_AUDIENCE,
        access_token_ttl=config.access_token_ttl,
        state_dir=config.data_dir,
        mcp_resource=(
            tokens.mcp_resource_url(f"http://{config.host}:{config.gateway_port}")
            if config.gateway_port
            else None
        ),
    )
    undo.callback(idp.stop)
    return idp.start()


def start_moto(undo: ExitStack, config: StackConfig) -> str:
    """moto in server mode with the local DynamoDB patches and Step Functions execution on; its URL."""
    from moto.moto_server.threaded_moto_server import ThreadedMotoServer

    from .aws.dynamodb import local_dynamodb
    from .aws.moto_retention import bounded_retention

    undo.callback(restore_environment, set_environment(fake_aws_environment(config.region)))
    if not logging.getLogger("werkzeug").level:
        # moto's server would otherwise log every AWS call the handlers make.
        logging.getLogger("werkzeug").setLevel(logging.WARNING)
    # moto's DynamoDB keeps only the table's items and a Query reads only its partition
    # (memmy_local.aws.dynamodb); otherwise every transaction's copy of the table stayed in memory.
    undo.enter_context(local_dynamodb())
    # Nor every S3 object, SQS message and finished execution (memmy_local.aws.moto_retention).
    undo.enter_context(bounded_retention())
    moto = ThreadedMotoServer(ip_address=config.host, port=config.moto_port, verbose=False)
    moto.start()
    undo.callback(moto.stop)
    moto_port = moto.get_host_and_port()[1]
    moto_url = f"http://{config.host}:{moto_port}"
    # moto reads MOTO_PORT when its Step Functions interpreter makes a call, not at start; setting it
    # before the first request is enough, and binding port 0 first avoids a free-port race.
    undo.callback(
        restore_environment, set_environment({"MOTO_PORT": str(moto_port), "AWS_ENDPOINT_URL": moto_url})
    )
    # moto's config is process-wide and outlives the server: put it back as it was on stop, so that
    # code using moto in-process later (tests) does not inherit Step Functions execution.
    undo.callback(restore_moto_config, moto_config_snapshot())
    configure_moto(moto_url)
    _forget_containers()
    undo.callback(_forget_containers)
    return moto_url


def start_emulator(undo: ExitStack, config: StackConfig) -> MemosEmulator:
    """The MemOS emulator, one project per key (its SQLite file in the data dir, if any)."""
    from .provision.storage import memos_project_keys

    emulator = MemosEmulator(
        EmulatorConfig(
            host=config.host,
            port=config.memos_port,
            api_keys=memos_project_keys(config.memos_api_key, config.memos_projects, MEMOS_PROJECT),
            db_path=config.data_dir / MEMOS_DB_NAME if config.data_dir else None,
            processing_delay=config.memos_processing_delay,
            kb_quota=config.memos_kb_quota,
            search_qps=config.memos_search_qps,
            rewrite=config.memos_rewrite,
            hit_file_ids=config.memos_file_ids,
        )
    )
    emulator.start()
    undo.callback(emulator.stop)
    return emulator


def provision_template(
    undo: ExitStack,
    config: StackConfig,
    template_file: Path,
    template: dict[str, Any],
    *,
    moto_url: str,
    memos_url: str,
    idp: IdentityProvider,
) -> Deployment:
    """The template's resources on moto, the DynamoDB items of the data dir loaded into them (and dumped
    again on stop), and the functions' environment in this process's."""
    from .provision.resources import provision
    from .provision.storage import memos_backends_secret, memos_project_keys

    keys = memos_project_keys(config.memos_api_key, config.memos_projects, MEMOS_PROJECT)
    resources = provision(
        template,
        endpoint_url=moto_url,
        region=config.region,
        memos_api_key=config.memos_api_key,
        memos_secret=memos_backends_secret(keys, memos_url, config.memos_kb_quota, config.memos_search_qps),
        parameters={
            "JwtIssuer": idp.issuer,
            "JwtAudience": idp.audience,
            "MemosBaseUrl": memos_url,
            **mcp_token_parameters(config, idp),
        },
        template_dir=template_file.parent,
    )
    refs = resources.refs
    if config.data_dir is not None:
        tables, dump = table_names(template, refs), config.data_dir / DYNAMODB_DUMP_NAME
        dynamodb = dynamodb_client(moto_url, config.region)
        restore_tables(dynamodb, tables, dump)
        undo.callback(dump_tables, dynamodb, tables, dump)
    environments = function_environments(template, refs)
    undo.callback(restore_environment, set_environment(merged_environment(environments)))
    return Deployment(template, template_file, refs, environments, moto_url)


def start_gateway(
    undo: ExitStack, config: StackConfig, deployment: Deployment, idp: IdentityProvider
) -> Gateway:
    """The template's HTTP routes, behind a JWT authorizer that accepts the tokens ``idp`` signs."""
    from .gateway.authorizer import JwtAuthorizer
    from .gateway.server import Gateway, GatewayConfig
    from .provision.resources import LOCAL_ACCOUNT_ID

    gateway = Gateway(
        GatewayConfig(
            template_path=deployment.template_file,
            authorizer=JwtAuthorizer(idp.key, idp.issuer, idp.audience),
            repo_root=config.repo_root,
            host=config.host,
            port=config.gateway_port,
            refs=deployment.refs,
            environments=deployment.environments,
            region=config.region,
            account_id=LOCAL_ACCOUNT_ID,
        )
    )
    undo.callback(gateway.stop)
    gateway.start()
    idp.mcp_resource = tokens.mcp_resource_url(gateway.url)
    return gateway


def mcp_token_parameters(config: StackConfig, idp: IdentityProvider) -> dict[str, str]:
    """The template's parameters for the MCP clients' authorization server: the dev provider's issuer and
    JWKS, or none, for the service's own server (as deployed)."""
    if config.mcp_authorization == "service":
        return {}
    return {"McpTokenIssuer": idp.issuer, "McpJwksUrl": f"{idp.url}/jwks.json"}


def point_mcp_at_gateway(undo: ExitStack, deployment: Deployment, gateway: Gateway, config: StackConfig) -> None:
    """The remote MCP endpoint's own URL, the audience its tokens must carry: the gateway's ``/mcp``, known
    once the gateway listens (its port may be any free one). A URL the template sets is kept. With the
    service's own authorization server, its issuer is the gateway's URL too (``MCP_AUTH_ISSUER``: on AWS
    it is the API's domain, which the gateway's requests do not carry with their port)."""
    url = f"{gateway.url}/mcp"
    unset = [v for v in deployment.environments.values() if v.get("MCP_RESOURCE_URL") == ""]
    for variables in unset:
        variables["MCP_RESOURCE_URL"] = url
    if unset:
        undo.callback(restore_environment, set_environment({"MCP_RESOURCE_URL": url}))
    if config.mcp_authorization == "service":
        signed = [v for v in deployment.environments.values() if v.get("MCP_SIGNING_KEY")]
        for variables in signed:
            variables["MCP_AUTH_ISSUER"] = gateway.url
        undo.callback(restore_environment, set_environment({"MCP_AUTH_ISSUER": gateway.url}))


def function_pool(config: StackConfig, deployment: Deployment, gateway: Gateway) -> FunctionPool:
    """One warm function per logical id, shared by the runners below (the gateway's included)."""
    from .lambdas.functions import FunctionPool
    from .provision.resources import LOCAL_ACCOUNT_ID

    return FunctionPool(
        deployment.template,
        deployment.refs,
        deployment.environments,
        repo_root=config.repo_root or deployment.template_file.parent,
        region=config.region,
        account_id=LOCAL_ACCOUNT_ID,
        loaded=gateway.functions,
    )


def start_queue_runners(
    undo: ExitStack, config: StackConfig, deployment: Deployment, pool: FunctionPool
) -> None:
    """S3 -> SQS -> ingest: the event source mappings' part, run in-process (memmy_local.lambdas.runners)."""
    from .lambdas.runners import start_sqs_runners
    from .provision.resources import LOCAL_ACCOUNT_ID

    for runner in start_sqs_runners(
        deployment.template,
        deployment.refs,
        deployment.environments,
        repo_root=config.repo_root or deployment.template_file.parent,
        endpoint_url=deployment.moto_url,
        region=config.region,
        account_id=LOCAL_ACCOUNT_ID,
        pool=pool,
    ):
        undo.callback(runner.stop)


def dispatch_state_machine_tasks(
    undo: ExitStack, config: StackConfig, deployment: Deployment, pool: FunctionPool
) -> LambdaDispatcher:
    """Step Functions: moto runs the ASL; its Lambda tasks call the handlers here, in this process."""
    from .aws.stepfunctions import LambdaDispatcher, dispatching, states_all_as_on_aws

    dispatcher = LambdaDispatcher.for_template(
        deployment.template, deployment.refs, pool.get, config.task_overrides
    )
    undo.enter_context(dispatching(dispatcher))
    undo.enter_context(states_all_as_on_aws())
    return dispatcher


def start_schedules(
    undo: ExitStack, config: StackConfig, deployment: Deployment, pool: FunctionPool
) -> ScheduleRunner:
    """The scheduled functions on a timer and on demand: moto never fires schedules."""
    from .lambdas.runners import ScheduleRunner, schedule_sources
    from .provision.resources import LOCAL_ACCOUNT_ID

    schedules = ScheduleRunner(
        schedule_sources(deployment.template, deployment.refs),
        pool,
        region=config.region,
        account_id=LOCAL_ACCOUNT_ID,
        interval=config.schedule_interval,
    )
    undo.callback(schedules.stop)
    schedules.start()
    return schedules


def start_control(
    undo: ExitStack,
    config: StackConfig,
    schedules: ScheduleRunner,
    *,
    api_url: str,
    moto_url: str,
    idp: IdentityProvider,
) -> ControlServer:
    """The control endpoint (``memmy-local reconcile``), recorded with the stack's URLs in the dev home."""
    from .control import ControlServer

    control = ControlServer(
        schedules.run, lambda: schedules.functions, host=config.host, port=config.control_port
    )
    undo.callback(control.stop)
    # Recorded in the usual dev home too when the data dir is elsewhere, with the data dir: `memmy-local
    # token` and `reconcile` without --data-dir then find this stack and the key it checks.
    control.start(
        tokens.dev_home(config.data_dir),
        tokens.dev_home(),
        data_dir=None if config.data_dir is None else str(config.data_dir.resolve()),
        api_url=api_url,
        moto_url=moto_url,
        issuer=idp.issuer,
        idp_url=idp.url,
    )
    return control


def _forget_containers() -> None:
    """Drop what a previous stack's "containers" cached in this process: clients bound to its ports.

    Like new Lambda containers: the core layer's composition root forgets every client, adapter and the
    settings (``reset_composition``, which clears Powertools Parameters' caches too). Nothing is imported
    for it: before any handler ran there is nothing to forget.
    """
    composition = sys.modules.get(f"{CORE_PACKAGE}.composition")
    if composition is not None:
        composition.reset_composition()
