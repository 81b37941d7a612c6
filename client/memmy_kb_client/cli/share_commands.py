"""``memmy-kb kb share KB WHO|--team TEAM`` and ``kb unshare`` (or ``kb revoke``) ``KB WHO|--team TEAM``: a
knowledge base shared with, or revoked from, one person or a team (docs/teams.md). A person or a team, not
both and not neither (exit 2); the KB and the team by id or unique name; the service's refusals exit 1."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.delete_prompts import kb_label, member_label
from memmy_kb_client.cli.entries import KB_HELP, OWN, kb_named
from memmy_kb_client.cli.failures import CommandFailed
from memmy_kb_client.cli.rendering import Outcome
from memmy_kb_client.cli.team_entries import MEMBER, TEAM_HELP, team_named
from memmy_kb_client.cli.terminal import one_line

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient

Parent = argparse.ArgumentParser
# Runs an action as a command: ``commands.api_command``, passed in (that module registers these).
Runner = Callable[[Callable[["MemmyClient", argparse.Namespace], Any]], Callable[[argparse.Namespace], int]]
USAGE = 2


def _one_of(args: argparse.Namespace, verb: str) -> None:
    """A person or ``--team TEAM``: exactly one (exit 2 otherwise)."""
    if (args.who is None) == (args.team is None):
        raise CommandFailed(
            f"error: kb {verb} takes a person (user id, phone or email) or --team TEAM, one of them",
            code=USAGE,
        )


def _share(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    _one_of(args, "share")
    args.kb = kb_named(client, args.kb, owned=True)
    if args.team is None:
        member = client.share(args.kb, args.who)
        return Outcome(member, f"shared with {one_line(member['display_name'])} ({member['user_id']})")
    team = team_named(client, args.team, MEMBER)
    shared = client.share_with_team(args.kb, team.id)
    return Outcome(shared, f"shared {kb_label(client, args.kb)} with {team.label}: its members read it")


def _revoke(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    """Revoke a reader (owner), named as people know them; or unshare from a team (the KB's owner, or the
    team's owner or an admin: the KB may be one read through the team)."""
    _one_of(args, "revoke")
    if args.team is None:
        args.kb = kb_named(client, args.kb, owned=True)
        label = member_label(client, args.kb, args.who)
        client.remove_member(args.kb, args.who)
        return Outcome({"revoked": args.who}, f"revoked {label}")
    args.kb = kb_named(client, args.kb)
    team = team_named(client, args.team, MEMBER)
    label = kb_label(client, args.kb)
    client.unshare_from_team(args.kb, team.id)
    return Outcome({"revoked": team.id, "knowledge_base_id": args.kb}, f"unshared {label} from {team.label}")


def add_kb_share_commands(kb: argparse._SubParsersAction[Parent], common: Parent, command: Runner) -> None:
    """``kb share KB WHO|--team TEAM`` and ``kb unshare`` (also ``kb revoke``) ``KB WHO|--team TEAM``."""
    share = kb.add_parser(
        "share",
        parents=[common],
        help="share read-only with a person (user id, phone or email) or a team (owner)",
    )
    share.add_argument("kb", metavar="KB", help=KB_HELP[OWN])
    share.add_argument("who", metavar="WHO", nargs="?", help="the person: user id, phone or email")
    share.add_argument("--team", metavar="TEAM", help=f"share with a team instead: {TEAM_HELP[MEMBER]}")
    share.set_defaults(func=command(_share))
    revoke = kb.add_parser(
        "unshare",
        aliases=["revoke"],
        parents=[common],
        help="revoke a reader's access (owner), or unshare from a team (owner; the team's owner or an admin)",
    )
    revoke.add_argument("kb", metavar="KB", help="the knowledge base: its id, or its name if no other has it")
    revoke.add_argument("who", metavar="WHO", nargs="?", help="the reader's user id")
    revoke.add_argument("--team", metavar="TEAM", help=f"unshare from a team instead: {TEAM_HELP[MEMBER]}")
    revoke.set_defaults(func=command(_revoke))
