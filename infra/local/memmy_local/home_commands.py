"""``memmy-local token`` and ``memmy-local reconcile``: the commands that find the running stack (or its
signing key) through the dev home (``--data-dir``, else ``$MEMMY_KB_HOME``, else ``~/.memmy-kb``).

Imports stay inside the commands, as in ``memmy_local.cli``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

PROG = "memmy-local"


def _token(args: argparse.Namespace) -> int:
    from memmy_local import tokens
    from memmy_local.control import read_state

    # The running stack's issuer (its identity provider's URL), else the default provider's; without
    # --data-dir, the data dir of the stack recorded in the usual home, whose key it checks.
    try:
        state = read_state(tokens.dev_home(args.data_dir))
        issuer = str(state["issuer"])
    except (OSError, ValueError, KeyError, TypeError):
        state, issuer = {}, tokens.DEFAULT_ISSUER
    data_dir = args.data_dir
    if data_dir is None and isinstance(state.get("data_dir"), str):
        data_dir = Path(state["data_dir"])
    if args.mcp or args.client_name is not None:
        problem = _mcp_options_problem(args)
        if problem is not None:
            print(f"{PROG} token: {problem}", file=sys.stderr)
            return 2
        print(_mcp_token(args, state, issuer, tokens.signing_key_path(data_dir)))
        return 0
    token = tokens.issue_token(
        args.user,
        name=args.name,
        email=args.email,
        phone=args.phone,
        ttl_seconds=args.ttl if args.ttl is not None else tokens.DEFAULT_TTL_SECONDS,
        key_path=tokens.signing_key_path(data_dir),
        issuer=issuer,
    )
    print(token)
    return 0


def _mcp_token(args: argparse.Namespace, state: dict[str, object], issuer: str, key_path: Path) -> str:
    """An MCP access token (docs/login.md, "MCP clients") for the running stack's ``/mcp`` (the default
    API port's when no stack is recorded)."""
    from memmy_local import tokens

    api_url = state.get("api_url")
    resource = tokens.mcp_resource_url(api_url) if isinstance(api_url, str) else tokens.DEFAULT_MCP_RESOURCE
    return tokens.issue_mcp_token(
        args.user,
        resource=resource,
        client_name=args.client_name,
        ttl_seconds=args.ttl if args.ttl is not None else tokens.MCP_TTL_SECONDS,
        key_path=key_path,
        issuer=issuer,
    )


def _reconcile(args: argparse.Namespace) -> int:
    import json

    import httpx

    from memmy_local import tokens
    from memmy_local.control import TOKEN_HEADER, describe_run, read_state, state_file

    home = tokens.dev_home(args.data_dir)
    try:
        state = read_state(home)
    except (OSError, ValueError):
        print(
            f"{PROG} reconcile: no running local stack recorded in {state_file(home)}; start one with "
            f"`make run` in the repository's checkout, or `{PROG} up` (with the same --data-dir)",
            file=sys.stderr,
        )
        return 1
    url = f"{state['control_url']}/schedules/{args.function}"
    try:
        # The function's own timeout (300 s for reconcile) bounds the wait, plus a margin.
        response = httpx.post(url, headers={TOKEN_HEADER: state["token"]}, timeout=args.timeout)
    except httpx.HTTPError as err:
        print(
            f"{PROG} reconcile: the local stack at {url} did not answer ({type(err).__name__}: {err}); is it "
            "still running? start it with `make run` (with the same --data-dir)",
            file=sys.stderr,
        )
        return 1
    try:
        body = response.json()
    except ValueError:
        print(
            f"{PROG} reconcile: what answers at {url} is not the local stack's control endpoint "
            f"(HTTP {response.status_code}, not JSON); start the stack again with `make run`",
            file=sys.stderr,
        )
        return 1
    if args.json:
        print(json.dumps(body, indent=2, ensure_ascii=False))
    elif response.status_code == 200:
        print(describe_run(body["function"], body["result"]))
    else:
        failure = f"{body.get('errorType')}: {body.get('errorMessage')}" if "errorType" in body else body
        print(f"{PROG} reconcile: {args.function} failed ({failure})", file=sys.stderr)
    return 0 if response.status_code == 200 else 1


def add_reconcile(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    reconcile = commands.add_parser(
        "reconcile",
        help="run the scheduled reconcile function once in the running local stack and print what it repaired",
    )
    reconcile.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the stack's --data-dir, if it was started with one (default: $MEMMY_KB_HOME, else ~/.memmy-kb)",
    )
    reconcile.add_argument(
        "--function",
        default="ReconcileFunction",
        help="the scheduled function's logical id in template.yaml (default ReconcileFunction)",
    )
    reconcile.add_argument(
        "--timeout", type=float, default=330.0, metavar="SECONDS", help="how long to wait (default 330)"
    )
    reconcile.add_argument("--json", action="store_true", help="print the control endpoint's JSON")
    reconcile.set_defaults(func=_reconcile)


def add_token(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    token = commands.add_parser("token", help="print a login token for the local stack")
    token.add_argument("user", metavar="USER", help="the user id (the token's sub)")
    token.add_argument("--name", help="display name claim")
    token.add_argument("--email", help="email claim (asserted as verified)")
    token.add_argument("--phone", help="phone_number claim in E.164 (asserted as verified)")
    token.add_argument(
        "--ttl",
        type=int,
        default=None,
        metavar="SECONDS",
        help="lifetime (default 12 h; with --mcp 1 h, at most)",
    )
    token.add_argument(
        "--mcp",
        action="store_true",
        help="an access token for the stack's MCP endpoint (/mcp): scope kb.search, client memmy-local-cli",
    )
    token.add_argument(
        "--client-name",
        metavar="NAME",
        help="with --mcp: the client's name the token names (at most 100 characters)",
    )
    token.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="the stack's --data-dir, if it was started with one (default: $MEMMY_KB_HOME, else ~/.memmy-kb)",
    )
    token.set_defaults(func=_token)


def _mcp_options_problem(args: argparse.Namespace) -> str | None:
    """What is wrong with ``token``'s MCP options, in a sentence (exit status 2), or None."""
    from memmy_local import tokens

    if not args.mcp:
        return "--client-name applies only with --mcp."
    if args.name is not None or args.email is not None or args.phone is not None:
        return "--name, --email and --phone do not apply to --mcp: an MCP token carries no profile."
    if args.ttl is not None and not 0 < args.ttl <= tokens.MCP_TTL_SECONDS:
        return f"--ttl with --mcp must be between 1 and {tokens.MCP_TTL_SECONDS} seconds."
    if args.client_name is not None and not 0 < len(args.client_name) <= tokens.MAX_CLIENT_NAME:
        return f"--client-name must have between 1 and {tokens.MAX_CLIENT_NAME} characters."
    return None
