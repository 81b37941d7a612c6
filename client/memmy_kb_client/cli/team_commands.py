"""``memmy-kb team ...`` (docs/teams.md): create, list, show, invite and remove people, answer an
invitation, leave, rename, delete and change roles (``kb share|revoke KB --team TEAM``: ``share_commands``).
Each takes a team or person by id or unique name (``team_entries``), prints for people or, with ``--json``, the API's JSON, and exits as the
``kb`` commands do: 0 done, 1 refused (by the service, or a name that names nothing or several), 2 usage."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memmy_kb_client.cli.commands import api_command
from memmy_kb_client.cli.delete_prompts import confirmed, stdin_is_terminal
from memmy_kb_client.cli.failures import CommandFailed
from memmy_kb_client.cli.rendering import Outcome
from memmy_kb_client.cli.team_entries import (
    INVITED,
    MEMBER,
    TEAM_HELP,
    NamedTeam,
    person_in,
    person_label,
    team_named,
)
from memmy_kb_client.cli.team_rendering import render_invitations, render_team, render_teams
from memmy_kb_client.cli.terminal import one_line

if TYPE_CHECKING:
    from memmy_kb_client.sdk import MemmyClient

Action = Callable[["MemmyClient", argparse.Namespace], Any]
Parent = argparse.ArgumentParser


def _team(client: MemmyClient, args: argparse.Namespace, state: str = MEMBER) -> NamedTeam:
    return team_named(client, args.team, state)


def _create(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = client.create_team(args.name)
    return Outcome(team, f"created team '{one_line(team['name'])}' ({team['id']}): you own it")


def _show(client: MemmyClient, args: argparse.Namespace) -> Any:
    return client.get_team(_team(client, args).id)


def _invites(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    invited = [t for t in client.list_teams() if t.get("state") == "invited"]
    return Outcome({"items": invited}, render_invitations(invited))


def _add(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    invitation = client.invite(team.id, args.who)
    who = person_label(invitation)
    return Outcome(invitation, f"invited {who} to {team.label}: they join when they accept")


def _rm(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    member = person_in(client.get_team(team.id), args.who)
    client.remove_team_member(team.id, member["user_id"])
    if member.get("state") == "invited":
        text = f"cancelled the invitation of {person_label(member)} to {team.label}"
    else:
        text = f"removed {person_label(member)} from {team.label}"
    return Outcome({"removed": member["user_id"], "team_id": team.id}, text)


def _role(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    member = person_in(client.get_team(team.id), args.who)
    answer = client.set_team_role(team.id, member["user_id"], args.role)
    if args.role == "owner":
        text = f"{person_label(member)} now owns {team.label}; you are an admin of it"
    else:
        text = f"{person_label(member)} is now {'an admin' if args.role == 'admin' else 'a member'} of {team.label}"
    return Outcome(answer, text)


def _accept(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args, INVITED)
    membership = client.accept_team(team.id)
    return Outcome(membership, f"joined {team.label}: its knowledge bases are yours to read")


def _decline(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args, INVITED)
    client.decline_team(team.id, args.block)
    blocked = {"team": "; blocked the team", "owner": "; blocked its owner"}.get(args.block or "", "")
    return Outcome(
        {"declined": team.id, "blocked": args.block}, f"declined the invitation to {team.label}{blocked}"
    )


def _my_id(client: MemmyClient) -> str:
    """The caller's user id: the login's (the desktop service's user, a token's subject), else the profile's."""
    route = getattr(client, "route", None)
    user = route.user if route is not None else None
    return user or client.me()["user_id"]


def _leave(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    client.remove_team_member(team.id, _my_id(client))
    return Outcome({"left": team.id}, f"left {team.label}")


def _rename(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    renamed = client.rename_team(team.id, args.name)
    return Outcome(renamed, f"renamed {team.label} to '{one_line(renamed['name'])}' ({renamed['id']})")


def _delete(client: MemmyClient, args: argparse.Namespace) -> Outcome:
    team = _team(client, args)
    if not args.yes and not confirmed(
        f"Delete {team.label}? Its members stop reading its knowledge bases (the knowledge bases stay their owners')."
    ):
        raise CommandFailed("not deleted")
    client.delete_team(team.id)
    return Outcome({"deleted": team.id}, f"deleted {team.label}")


def _confirmable(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Refuse at once, without a terminal to ask on and without --yes (as the ``rm`` commands do)."""

    def run(args: argparse.Namespace) -> int:
        if not args.yes and not stdin_is_terminal():
            print(
                "error: not deleting: stdin is not a terminal to confirm on; add --yes to delete without asking",
                file=sys.stderr,
            )
            return 1
        return command(args)

    return run


def add_team_commands(commands: argparse._SubParsersAction[Parent], common: Parent, confirm: Parent) -> None:
    """The ``team`` group on the top-level parser's subcommands."""
    team = commands.add_parser("team", help="teams: share a knowledge base with a group at once")
    group = team.add_subparsers(dest="team_command", required=True)

    def add(
        name: str,
        help_text: str,
        action: Action,
        render: Callable[[Any], str] = str,
        *,
        takes: str | None = MEMBER,
    ) -> Parent:
        parser = group.add_parser(name, parents=[common], help=help_text)
        parser.set_defaults(func=api_command(action, render))
        if takes is not None:
            parser.add_argument("team", metavar="TEAM", help=TEAM_HELP[takes])
        return parser

    add("create", "create a team (you own it)", _create, takes=None).add_argument("name", metavar="NAME")
    add("ls", "list your teams and invitations", lambda c, a: c.list_teams(), render_teams, takes=None)
    add("show", "show a team, its members and its knowledge bases", _show, render_team)
    add("add", "invite a person by user id, phone or email (owner, admin)", _add).add_argument(
        "who", metavar="WHO"
    )
    add("rm", "remove a member or cancel an invitation (owner, admin)", _rm).add_argument(
        "who", metavar="WHO", help="their user id, or their name if no other member has it"
    )
    add("invites", "list the teams that invited you", _invites, takes=None)
    add("accept", "accept an invitation and join the team", _accept, takes=INVITED)
    add("decline", "decline an invitation", _decline, takes=INVITED).add_argument(
        "--block", choices=["team", "owner"], help="and block the team, or its owner, from inviting you again"
    )
    add("leave", "leave a team (its owner transfers or deletes it instead)", _leave)
    add("rename", "rename a team (owner, admin)", _rename).add_argument("name", metavar="NAME")
    role = add("role", "make a member admin or member, or transfer the ownership (owner)", _role)
    role.add_argument("who", metavar="WHO", help="their user id, or their name if no other member has it")
    role.add_argument("role", choices=["admin", "member", "owner"])
    delete = group.add_parser("delete", parents=[common, confirm], help="delete a team (owner)")
    delete.add_argument("team", metavar="TEAM", help=TEAM_HELP[MEMBER])
    delete.set_defaults(func=_confirmable(api_command(_delete)))
