"""``memmy-kb recall "question"`` for people and ``memmy-kb hook claude-code`` for the agent.

Imports stay inside the commands: the hook runs before every agent turn and must start fast.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memmy_kb_client.terminal import printable


def _render(result: dict[str, Any]) -> str:
    if result.get("discarded"):
        return "Your knowledge bases changed during the search, so its result was dropped; ask again."
    items = result.get("items") or []
    if not items:
        searched = result.get("scope_size", 0)
        if not searched:
            return "No knowledge base takes part in your recall (see `memmy-kb kb ls`)."
        return f"Nothing relevant found in {searched} knowledge base(s)."
    blocks = []
    for index, item in enumerate(items, 1):
        score = item.get("score")
        shown = f"  (score {score:.2f})" if isinstance(score, int | float) else ""
        body = "\n".join(f"    {line}" for line in str(item.get("content", "")).splitlines())
        blocks.append(f"[{index}] 《{item.get('title', '')}》{shown}\n{body}")
    return "\n\n".join(blocks)


def _recall(args: argparse.Namespace) -> int:
    from memmy_kb_client.sdk import ClientConfig, MemmyApiError, MemmyClient

    try:
        with MemmyClient(ClientConfig.load(args.endpoint, args.token)) as client:
            result = client.recall(args.query, args.limit)
    except MemmyApiError as err:
        print(printable(f"error: {err.message} ({err.status} {err.code})"), file=sys.stderr)
        return 1
    if args.json:
        print(printable(json.dumps(result, ensure_ascii=False, indent=2)))
    elif args.context:
        print(printable(result.get("context", "")))
    else:
        print(printable(_render(result)))
    return 0


def _hook_claude_code(args: argparse.Namespace) -> int:
    import os

    from memmy_kb_client.hook import run_claude_code

    return run_claude_code(sys.stdin.buffer, sys.stdout.buffer, os.environ)


def add_recall_commands(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Register ``recall`` and ``hook`` on the top-level parser's subcommands."""
    recall = commands.add_parser(
        "recall", help="search the knowledge bases in your recall, as the agent hook does"
    )
    recall.add_argument("query", help="the question")
    recall.add_argument("--limit", type=int, default=None, help="at most this many excerpts (1-25)")
    recall.add_argument("--endpoint", help="API URL (default: $MEMMY_KB_ENDPOINT, saved login, local stack)")
    recall.add_argument("--token", help="login token (default: $MEMMY_KB_TOKEN or the saved login)")
    output = recall.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the API's JSON")
    output.add_argument("--context", action="store_true", help="print the block the agent hook injects")
    recall.set_defaults(func=_recall)

    hook = commands.add_parser(
        "hook", help="agent hooks (run by the agent before each turn, not by hand)"
    ).add_subparsers(dest="hook", required=True)
    claude_code = hook.add_parser(
        "claude-code",
        help="Claude Code UserPromptSubmit hook: reads the event on stdin, prints the turn's excerpts",
        description="Prints nothing and exits 0 on any failure, within $MEMMY_KB_HOOK_TIMEOUT_SECONDS "
        "(default 4).",
    )
    claude_code.set_defaults(func=_hook_claude_code)
