"""The local stack for ``make load``, run as a subprocess of ``bench.load`` (``python -m bench.load_stack``).

The same ``LocalStack`` as ``memmy-local up``, on loopback and free ports, with two differences:

- the per-owner abuse limits (share attempts, new members per day, KBs per user) are raised in a copy of
  ``template.yaml`` written to ``--home``, as a deployer would set them, so that a minute of sharing
  measures the service rather than its rate limiter (``--keep-limits`` keeps the template's values; a
  429 is then counted apart from errors);
- ``--memos-projects N`` runs the MemOS emulator with N projects and the stack with N backends of 100 KBs
  each (one: the single key, as deployed), so that many users' KBs fit as a deployer would make them fit;
- ``--set NAME=VALUE`` puts VALUE in the template copy for a function's environment variable NAME (the
  recall limit's ``RECALL_BURST``, say), as a deployer would set it;
- ``--fault recall-ignores-setting`` deliberately breaks the service (recall searches every grant, its
  recall switch ignored), so that a test can prove the load test's oracle catches a scope leak; SIGUSR1
  breaks a running stack the same way (it answers with a ``LOAD-STACK-FAULT`` line), so that one stack
  can serve a clean run and then a broken one; ``--fault team-invitation-reads`` breaks it another way
  (an invitation reads the team's KBs as a membership would, so an invited user recalls them before
  accepting), to prove the oracle catches a leak through a team.

The signing key and the control endpoint's record go to ``--home`` (``MEMMY_KB_HOME``). Once up, one line
``LOAD-STACK-READY {json}`` gives the URLs; SIGTERM stops it.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import re
import signal
import sys
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memmy_kb.domain.ports.knowledge_bases import GrantReader
    from memmy_kb.records import GrantRecord

READY_PREFIX = "LOAD-STACK-READY "
FAULT_PREFIX = "LOAD-STACK-FAULT "
RAISED_LIMITS = {
    "SHARE_ATTEMPT_LIMIT": "1000000",
    "NEW_MEMBERS_PER_DAY": "1000000",
    "MAX_KBS_PER_USER": "10000",
}
FAULTS = ("recall-ignores-setting", "team-invitation-reads")
# The recall function's per-user limit and fleet budget, reported in the ready line (bench.fair_recall).
RECALL_LIMITS = (
    "RECALL_BURST",
    "RECALL_RATE_PER_SECOND",
    "RECALL_LIMIT_WINDOW_SECONDS",
    "RECALL_FLEET_BUDGET",
)


def load_template_copy(home: Path, *, raise_limits: bool, settings: Mapping[str, str] | None = None) -> Path:
    """``template.yaml`` copied into ``home``, its relative state machine paths made absolute, the limits
    raised unless told otherwise, and each of ``settings`` (a function's environment variable) set."""
    from memmy_local.template import template_path

    source = template_path()
    text = source.read_text(encoding="utf-8")
    text = re.sub(
        r"^(\s*DefinitionUri:\s*)(\S+)\s*$",
        lambda m: m.group(1) + str((source.parent / m.group(2)).resolve()),
        text,
        flags=re.MULTILINE,
    )
    if raise_limits:
        for name, value in RAISED_LIMITS.items():
            text = re.sub(rf"^(\s*{name}:\s*).*$", rf'\g<1>"{value}"', text, flags=re.MULTILINE)
    for name, value in (settings or {}).items():
        text, found = re.subn(
            rf"^(\s*{re.escape(name)}:\s*).*$", rf'\g<1>"{value}"', text, flags=re.MULTILINE
        )
        if not found:  # every function taking the setting gets the value (the share and teams functions' limits)
            raise ValueError(f"{name} is no function setting of template.yaml")
    target = home / "template.yaml"
    target.write_text(text, encoding="utf-8")
    return target


def _limits_in_effect(stack: Any, settings: Mapping[str, str]) -> dict[str, str]:
    environments = stack.function_environments
    shown = {*RAISED_LIMITS, *settings}
    return {name: value for env in environments.values() for name, value in env.items() if name in shown}


def parse_setting(text: str) -> tuple[str, str]:
    name, equals, value = text.partition("=")
    if not equals or not re.fullmatch(r"[A-Z][A-Z0-9_]*", name):
        raise argparse.ArgumentTypeError(f"{text!r} is not NAME=VALUE with an upper-case NAME")
    return name, value


def break_recall_scope() -> None:
    """The deliberate fault: recall's scope includes the grants whose recall is turned off (the first
    read and the re-check alike, per KB and combined)."""
    from memmy_kb.domain.access import ScopeEntry
    from memmy_kb.domain.recall import search, turn

    def all_grants(grants: GrantReader, user_id: str) -> list[GrantRecord]:
        return list(grants.query_grants(user_id))

    def every_grant(grants: GrantReader, user_id: str) -> frozenset[ScopeEntry]:
        return frozenset(ScopeEntry(g.kb_id, g.memos_kb_id) for g in grants.query_grants(user_id))

    # The names each module imported from memmy_kb.domain.access, replaced where the recall looks them up.
    vars(turn).update(recall_grants=all_grants, compute_recall_scope=every_grant)
    vars(search).update(compute_recall_scope=every_grant)


def break_team_reach() -> None:
    """The deliberate team fault: the caller's reach counts their invitations as memberships (the
    teams' META read for them too), so recall and access give an invited user the team's KBs."""
    from memmy_kb.adapters.dynamodb.team_shares import TeamShareMixin
    from memmy_kb.domain.ports.team_shares import Reach

    original = TeamShareMixin.read_reach

    def read_reach(self: TeamShareMixin, user_id: str, *, with_grants: bool) -> Reach:
        reach = original(self, user_id, with_grants=with_grants)
        invited = [m.team_id for m in reach.memberships if m.state == "invited"]
        joined = [m.model_copy(update={"state": "member"}) for m in reach.memberships]
        return Reach(
            reach.grants, joined, {**reach.teams, **(self.batch_get_teams(invited) if invited else {})}
        )

    TeamShareMixin.read_reach = read_reach  # type: ignore[method-assign]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--home", type=Path, required=True, help="signing key, control record, template copy")
    parser.add_argument("--processing-delay", type=float, default=0.2, help="MemOS emulator processing delay")
    parser.add_argument("--keep-limits", action="store_true", help="keep the template's abuse limits")
    parser.add_argument(
        "--memos-projects", type=int, default=1, help="MemOS projects (backends), 100 KBs each"
    )
    parser.add_argument("--fault", choices=FAULTS, help="break the service on purpose (oracle tests)")
    parser.add_argument("--memos-qps", type=float, default=None, help="MemOS's rate limit in the emulator")
    parser.add_argument(
        "--set",
        type=parse_setting,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a function's setting",
    )
    args = parser.parse_args(argv)
    settings = dict(args.set)

    logging.basicConfig(level=logging.WARNING, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    warnings.filterwarnings("ignore", message="No application metrics to publish")
    os.environ["MEMMY_KB_HOME"] = str(args.home)
    args.home.mkdir(parents=True, exist_ok=True)

    from memmy_local.stack import LocalStack, StackConfig
    from memmy_local.template import TEMPLATE_PATH

    config = StackConfig(
        gateway_port=0,
        memos_port=0,
        moto_port=0,
        idp_port=0,
        memos_processing_delay=args.processing_delay,
        memos_search_qps=args.memos_qps,
        memos_projects=args.memos_projects,
        template_path=load_template_copy(args.home, raise_limits=not args.keep_limits, settings=settings),
        repo_root=TEMPLATE_PATH.parent,
        schedule_interval=0,
    )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with LocalStack(config) as stack:
        # After the start: importing the core layer earlier would build Powertools' metrics before the
        # stack has put the functions' environment (their namespace) in place.
        if args.fault == "recall-ignores-setting":
            break_recall_scope()
        elif args.fault == "team-invitation-reads":
            break_team_reach()

        def break_on_signal(*_: Any) -> None:
            break_recall_scope()
            print(FAULT_PREFIX + "recall-ignores-setting", flush=True)

        signal.signal(signal.SIGUSR1, break_on_signal)
        ready = {
            "api_url": stack.api_url,
            "memos_url": stack.memos_url,
            "memos_api_url": stack.memos_api_url,
            "control_url": stack.control_url,
            "limits": _limits_in_effect(stack, settings),
            "recall_limits": {
                name: stack.function_environments["RecallFunction"].get(name) for name in RECALL_LIMITS
            },
            "fault": args.fault,
        }
        print(READY_PREFIX + json.dumps(ready), flush=True)
        try:
            while not stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
