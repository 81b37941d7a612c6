"""``memmy-kb recall`` for people, and the agents' commands: ``hook AGENT``, ``hook install`` (and
``--mcp``), ``hook status`` and ``mcp``; each imports what it runs only when it runs."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.terminal import one_line, printable
from memmy_kb_client.recall_contract import MAX_RECALL_LIMIT
from memmy_kb_client.recall_reply import RecallFile, document_path, read_file, read_files, section_of

if TYPE_CHECKING:
    from memmy_kb_client.replies import RecallGroupKb, RecallItem, RecallKb, RecallResponse


def _kb_text(kb: RecallKb | RecallGroupKb, owner: object, team: object = None) -> str:
    """The KB's name and id, its sharer, and the team one reads it through only (an item's or a group KB's)."""
    text = f"{one_line(kb.get('name', ''))} ({one_line(kb.get('id', ''))})"
    if isinstance(owner, dict):
        contact = f", {one_line(owner['contact'])}" if owner.get("contact") else ""
        text += f", shared by {one_line(owner.get('name', ''))}{contact}"
    if isinstance(team, dict) and isinstance(team.get("name"), str):
        text += f", team {one_line(team['name'])} ({one_line(team.get('id', ''))})"
    return text


def _source(item: RecallItem, file: RecallFile | None) -> str:
    """The KB an excerpt comes from (and its sharer), or the KBs of the group it comes from (the one its
    file is in, when the file names it); "" when the service searched the whole scope at once and names
    none."""
    kb = item.get("knowledge_base")
    if isinstance(kb, dict):
        return f"    from: {_kb_text(kb, item.get('owner'), item.get('team'))}\n"
    group = [k for k in item.get("knowledge_bases") or [] if isinstance(k, dict)]
    home = [k for k in group if file is not None and k.get("id") == file["knowledge_base_id"]]
    if home:
        return f"    from: {_kb_text(home[0], home[0].get('owner'), home[0].get('team'))}\n"
    if group:
        return f"    from one of: {'; '.join(_kb_text(k, k.get('owner'), k.get('team')) for k in group)}\n"
    return ""


def _document(file: RecallFile | None, candidates: list[RecallFile]) -> str:
    """The file an excerpt comes from, by its path in the KB, id and version; or the files it may come from
    when several hold its text; "" when the service names none."""
    if file is not None:
        version = f", v{file['version']}" if file["version"] is not None else ""
        return f"    file: {one_line(document_path(file))} ({one_line(file['id'])}{version})\n"
    if candidates:
        return f"    file one of: {'; '.join(one_line(document_path(f)) for f in candidates)}\n"
    return ""


def _heading(item: RecallItem, file: RecallFile | None) -> str:
    """``《handbook.md》 § Refunds`` for an excerpt of a known file, else ``《Refunds》`` (the section's
    heading as MemOS keeps it)."""
    if file is None:
        return f"《{one_line(item.get('title', ''))}》"
    section = section_of(item.get("title"), file)
    return f"《{one_line(file['name'])}》" + (f" § {one_line(section)}" if section else "")


# The labels of the lines the CLI writes under an excerpt's heading.
_OWN_LABELS = ("from:", "from one of:", "file:", "file one of:")


def _body_line(line: str) -> str:
    """An excerpt's line; one that would read as the CLI's own ``from:`` or ``file:`` line (the document's
    text, written by whoever shared it) is prefixed with "› ", as the context block defuses its own labels."""
    return f"› {line}" if line.startswith(_OWN_LABELS) else line


# Why a recall found nothing when it searched no knowledge base, as the page says it.
NO_KNOWLEDGE_BASES = (
    "You have no knowledge bases in recall yet: create one (`memmy-kb kb create NAME`) and upload files into "
    "it (`memmy-kb files upload KB_ID FILE`), or ask a colleague to share theirs with you."
)
NONE_IN_RECALL = (
    "None of your knowledge bases takes part in recall: turn it on for those to search "
    "(`memmy-kb kb recall KB_ID on`; `memmy-kb kb ls` lists them)."
)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _render(result: RecallResponse, has_knowledge_bases: bool = True) -> str:
    """The excerpts for people; when none came, why: nothing matched in the knowledge bases searched, or
    none was searched (``has_knowledge_bases``: whether the user has any, in recall or not)."""
    items = result.get("items") or []
    if result.get("discarded") and not items:
        return "Your knowledge bases changed during the search, so its result was dropped; ask again."
    notes = []
    if result.get("discarded"):
        notes.append(
            "(Some knowledge bases left your recall during the search; their excerpts were dropped.)"
        )
    if result.get("partial"):
        notes.append("(Some knowledge bases could not be searched just now; these are the others' excerpts.)")
    if not items:
        searched = result.get("scope_size", 0)
        if not searched:
            return NONE_IN_RECALL if has_knowledge_bases else NO_KNOWLEDGE_BASES
        return "\n".join([*notes, f"Nothing relevant found in {_count(searched, 'knowledge base')}."])
    blocks = []
    for index, item in enumerate(items, 1):
        score = item.get("score")
        shown = f"  (score {score:.2f})" if isinstance(score, int | float) else ""
        body = "\n".join(f"    {_body_line(line)}" for line in str(item.get("content", "")).splitlines())
        file, candidates = read_file(item.get("file")), read_files(item.get("files"))
        about = _document(file, candidates) + _source(item, file)
        blocks.append(f"[{index}] {_heading(item, file)}{shown}\n{about}{body}")
    return "\n\n".join([*notes, *blocks])


def _recall(args: argparse.Namespace) -> int:
    from memmy_kb_client.cli.transfer_commands import client_for
    from memmy_kb_client.sdk import MemmyApiError

    has_knowledge_bases = True
    try:
        with client_for(args) as client:
            result = client.recall(args.query, args.limit)
            if not (args.json or args.context or result.get("items") or result.get("scope_size")):
                has_knowledge_bases = bool(client.list_knowledge_bases())
    except MemmyApiError as err:
        print(printable(f"error: {err.message} ({err.status} {err.code})"), file=sys.stderr)
        return 1
    if args.json:
        print(printable(json.dumps(result, ensure_ascii=False, indent=2)))
    elif args.context:
        print(printable(result.get("context", "")))
    else:
        print(printable(_render(result, has_knowledge_bases)))
    return 0


def _hook(args: argparse.Namespace) -> int:
    from memmy_kb_client.agents.hook import main

    return main(args.agent)


def _hook_install(args: argparse.Namespace) -> int:
    if args.mcp:
        return _mcp_install(args)
    from memmy_kb_client.agents.hook_install import SettingsError, apply
    from memmy_kb_client.agents.hook_status import install_message

    try:
        change = apply(args.agent, project=args.project, uninstall=args.uninstall)
    except (SettingsError, OSError) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    if args.json:
        return _installed_json(args, change)
    if not change.changed:
        state = "has no Memmy hook" if args.uninstall else "already has the Memmy hook"
        print(printable(f"{change.path} {state}; nothing changed"))
        return 0
    print(printable(change.diff()), end="")
    if args.uninstall:
        print(printable(f"removed the Memmy hook from {change.path}"))
    else:
        print(printable(f"installed the Memmy hook in {change.path}"))
        for line in install_message(args.agent, args.project, os.environ):
            print(printable(line))
    return 0


def _mcp_install(args: argparse.Namespace) -> int:
    from memmy_kb_client.agents.hook_install import SettingsError
    from memmy_kb_client.agents.mcp_install import agent_steps, apply
    from memmy_kb_client.home.paths import desktop_dir
    from memmy_kb_client.home.service_state import service_state

    try:
        change = apply(args.agent, project=args.project, uninstall=args.uninstall)
    except (SettingsError, OSError) as err:
        print(printable(f"error: {err}"), file=sys.stderr)
        return 1
    except ModuleNotFoundError as err:
        if err.name != "tomlkit":
            raise
        print(
            "error: memmy-kb hook install codex --mcp needs tomlkit: install the client with its mcp extra.",
            file=sys.stderr,
        )
        return 2
    if args.json:
        return _installed_json(args, change)
    if not change.changed:
        state = "does not register" if args.uninstall else "already registers"
        print(printable(f"{change.path} {state} the memmy-kb MCP server; nothing changed"))
        return 0
    print(printable(change.diff()), end="")
    if args.uninstall:
        print(printable(f"removed the memmy-kb MCP server from {change.path}"))
        return 0
    print(printable(f"registered the memmy-kb MCP server (memmy-kb mcp) in {change.path}"))
    service = service_state(desktop_dir(os.environ))[1]
    ready = service.replace("the hook is ready", "memmy-kb mcp is ready")
    for line in [ready, *agent_steps(args.agent, args.project)]:
        print(printable(line))
    return 0


def _installed_json(args: argparse.Namespace, change: Any) -> int:
    """``hook install --json``: which settings file, whether it changed, and what it holds now."""
    answer = {
        "agent": args.agent,
        "what": "mcp" if args.mcp else "hook",
        "settings": str(change.path),
        "changed": change.changed,
        "installed": not args.uninstall,
    }
    print(printable(json.dumps(answer, ensure_ascii=False, indent=2)))
    return 0


def _mcp(args: argparse.Namespace) -> int:
    from memmy_kb_client.agents.mcp_server import main

    return main()


def _hook_status(args: argparse.Namespace) -> int:
    from memmy_kb_client.agents.hook_status import render_status, status

    rows = status(os.environ, args.project)
    if args.json:
        print(printable(json.dumps(rows, ensure_ascii=False, indent=2)))
    else:
        print(printable(render_status(rows)))
    return 0


def add_recall_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``recall`` and ``hook`` on the top-level parser's subcommands."""
    recall = commands.add_parser(
        "recall", help="search the knowledge bases in your recall, as the agent hook does"
    )
    recall.add_argument("query", help="the question")
    recall.add_argument(
        "--limit",
        type=int,
        default=None,
        help=f"at most this many excerpts (1-{MAX_RECALL_LIMIT}; default: the service's)",
    )
    recall.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    recall.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    output = recall.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the API's JSON")
    output.add_argument("--context", action="store_true", help="print the block the agent hook injects")
    recall.set_defaults(func=_recall)

    hook = commands.add_parser(
        "hook", help="agent hooks (run by the agent before each turn, not by hand) and their install"
    ).add_subparsers(dest="hook", required=True)
    descriptions = {
        "claude-code": "Claude Code UserPromptSubmit hook: prints the turn's excerpts as plain text",
        "codex": "Codex CLI UserPromptSubmit hook (hooks.json): prints the turn's excerpts as plain text",
        "gemini": "Gemini CLI BeforeAgent hook: prints hookSpecificOutput.additionalContext JSON",
    }
    for agent, text in descriptions.items():
        command = hook.add_parser(
            agent,
            help=text,
            description=f"{text}. Reads the event on stdin and asks the local service (memmy-kb desktop "
            "serve) with the hook token; never reads the cloud login. Prints nothing and exits 0 on any "
            "failure, within $MEMMY_KB_HOOK_TIMEOUT_SECONDS (default 4).",
        )
        command.set_defaults(func=_hook, agent=agent)

    install = hook.add_parser(
        "install",
        help="add the hook to an agent's settings (or take it out with --uninstall); shows the diff",
    )
    install.add_argument("agent", choices=list(descriptions), help="the agent")
    install.add_argument(
        "--project",
        type=Path,
        default=None,
        metavar="DIR",
        help="the project's settings in DIR (.claude/, .codex/ or .gemini/) instead of your own",
    )
    install.add_argument("--uninstall", action="store_true", help="remove the Memmy hook instead")
    install.add_argument(
        "--json", action="store_true", help="print the settings file and whether it changed as JSON (no diff)"
    )
    install.add_argument(
        "--mcp",
        action="store_true",
        help="register the memmy-kb MCP server in the agent's MCP configuration instead of the hook "
        "(~/.claude.json or DIR/.mcp.json, config.toml, settings.json)",
    )
    install.set_defaults(func=_hook_install)

    mcp = commands.add_parser(
        "mcp",
        help="the MCP server agents start to search your knowledge bases (stdio; see hook install --mcp)",
        description="A Model Context Protocol server on stdin/stdout with the tools search_knowledge and "
        "list_knowledge_bases, answered by the local service (memmy-kb desktop serve) with the hook token; "
        "never reads the cloud login. Needs the client's mcp extra.",
    )
    mcp.set_defaults(func=_mcp)

    state = hook.add_parser(
        "status", help="for each agent: is the hook installed, when did it last run, with what outcome"
    )
    state.add_argument(
        "--project", type=Path, default=None, metavar="DIR", help="the project's settings in DIR instead"
    )
    state.add_argument("--json", action="store_true", help="print the status as JSON")
    state.set_defaults(func=_hook_status)
