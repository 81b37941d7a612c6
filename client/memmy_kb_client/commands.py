"""``memmy-kb login``, ``me`` and ``kb ...``: the knowledge-base commands people use."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from typing import Any

Command = Callable[[argparse.Namespace], int]


def _client(args: argparse.Namespace) -> Any:
    from memmy_kb_client.sdk import ClientConfig, MemmyClient

    return MemmyClient(ClientConfig.load(args.endpoint, args.token))


def _run(action: Callable[[Any, argparse.Namespace], Any], render: Callable[[Any], str]) -> Command:
    """Run an SDK call; print JSON with --json, else the rendering; API errors to stderr with exit 1."""

    def command(args: argparse.Namespace) -> int:
        from memmy_kb_client.sdk import MemmyApiError

        try:
            with _client(args) as client:
                result = action(client, args)
        except MemmyApiError as err:
            print(f"error: {err.message} ({err.status} {err.code})", file=sys.stderr)
            return 1
        if args.json:
            print(json.dumps(result, ensure_ascii=False, indent=2))
        else:
            print(render(result))
        return 0

    return command


def _kb_line(kb: dict[str, Any]) -> str:
    recall = "recall on " if kb["recall"] else "recall off"
    return f"{kb['id']}  {recall}  {kb['name']}"


def _render_list(kbs: list[dict[str, Any]]) -> str:
    owned = [kb for kb in kbs if kb["role"] == "owner"]
    shared = [kb for kb in kbs if kb["role"] != "owner"]
    lines = ["My knowledge bases:"] + ([f"  {_kb_line(kb)}" for kb in owned] or ["  (none)"])
    if shared:
        lines.append("Shared with me:")
        lines += [f"  {_kb_line(kb)}  (from {kb['owner']['display_name']})" for kb in shared]
    return "\n".join(lines)


def _render_members(members: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m['user_id']}  {m['role']:<6}  {m['display_name']}" for m in members)


def _leave(client: Any, args: argparse.Namespace) -> str:
    from memmy_kb_client.sdk import ClientConfig, token_subject

    me = token_subject(ClientConfig.load(args.endpoint, args.token).token or "")
    if me is None:
        raise SystemExit("error: no login token; run `memmy-kb login --token ...` first")
    client.remove_member(args.kb, me)
    return f"left {args.kb}"


def _login(args: argparse.Namespace) -> int:
    from memmy_kb_client.sdk import ClientConfig

    config = ClientConfig.load(args.endpoint, args.token)
    print(f"saved endpoint {config.endpoint} to {config.save()}")
    return 0


def add_kb_commands(commands: argparse._SubParsersAction) -> None:
    """Register ``login``, ``me`` and the ``kb`` group on the top-level parser's subcommands."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    common.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    common.add_argument("--json", action="store_true", help="print the API's JSON")

    login = commands.add_parser(
        "login", parents=[common], help="save the endpoint and token for later commands"
    )
    login.set_defaults(func=_login)
    me = commands.add_parser(
        "me", parents=[common], help="register and show your profile (name, email, phone)"
    )
    me.set_defaults(
        func=_run(lambda c, a: c.me(), lambda r: "\n".join(f"{k}: {v}" for k, v in r.items() if v))
    )

    kb = commands.add_parser("kb", help="knowledge bases").add_subparsers(dest="kb_command", required=True)

    def add(
        name: str,
        help_text: str,
        action: Callable[[Any, argparse.Namespace], Any],
        render: Callable[[Any], str],
    ):
        parser = kb.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(func=_run(action, render))
        return parser

    add(
        "create", "create a knowledge base", lambda c, a: c.create_knowledge_base(a.name), _kb_line
    ).add_argument("name")
    add("ls", "list owned and shared knowledge bases", lambda c, a: c.list_knowledge_bases(), _render_list)
    rename = add(
        "rename",
        "rename a knowledge base (owner)",
        lambda c, a: c.rename_knowledge_base(a.kb, a.name),
        _kb_line,
    )
    rename.add_argument("kb")
    rename.add_argument("name")
    recall = add(
        "recall",
        "turn your recall of a knowledge base on or off",
        lambda c, a: c.set_recall(a.kb, a.state == "on"),
        _kb_line,
    )
    recall.add_argument("kb")
    recall.add_argument("state", choices=["on", "off"])
    share = add(
        "share",
        "share read-only by user id, phone or email (owner)",
        lambda c, a: c.share(a.kb, a.identifier),
        lambda m: f"shared with {m['display_name']} ({m['user_id']})",
    )
    share.add_argument("kb")
    share.add_argument("identifier")
    unshare = add(
        "unshare",
        "revoke a reader's access (owner)",
        lambda c, a: c.remove_member(a.kb, a.user) or f"revoked {a.user}",
        str,
    )
    unshare.add_argument("kb")
    unshare.add_argument("user")
    add(
        "members",
        "list a knowledge base's members (owner)",
        lambda c, a: c.list_members(a.kb),
        _render_members,
    ).add_argument("kb")
    add("leave", "leave a knowledge base shared with you", _leave, str).add_argument("kb")
