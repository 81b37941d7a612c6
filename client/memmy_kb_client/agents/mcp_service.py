"""What ``memmy-kb mcp`` asks of the local service with the hook token (the scope, a search) and the names
the agent gives turned into ids inside the recall scope; every failure a ``ToolRefused`` saying what to do
(docs/desktop.md, "Agents that search"); the scope in words. How the search's answers read: ``mcp_render``."""

from __future__ import annotations

import json
import logging
import os
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, cast

from memmy_kb_client.agents.mcp_frames import replace_lone_surrogates
from memmy_kb_client.agents.mcp_render import SearchResult, read_excerpt, read_owner, sharer
from memmy_kb_client.home import paths
from memmy_kb_client.home.advice import command, how_to_start
from memmy_kb_client.home.proof import NotProven
from memmy_kb_client.home.proven import ConnectTo, ProvenConnection
from memmy_kb_client.http_client import read_error
from memmy_kb_client.recall_contract import MAX_RECALL_KBS

if TYPE_CHECKING:
    from memmy_kb_client.home.service_replies import ScopeKnowledgeBase, ScopeReply, SearchReply, Sharer
    from memmy_kb_client.recall_contract import RecallRequest

KNOWLEDGE_BASES_PATH: Final = "/hook/knowledge-bases"
SEARCH_PATH: Final = "/hook/search"
# The service waits up to 3.5 s for the cloud; an agent that asked can wait longer than a hook can.
TIMEOUT_SECONDS: Final = 15.0

logger = logging.getLogger("memmy_kb_client.mcp")


class ToolRefused(Exception):
    """A tool call that cannot be answered; the message is for the agent and says what to do."""


# What the service says of the cloud (``cloud``) -> the sentence the agent gets; ``{login}`` is the
# login command as the person can run it.
CLOUD_SENTENCES: Final = {
    "logged_out": "The Memmy desktop service is not logged in: run {login}.",
    "expired": "The Memmy desktop service's login has expired: run {login}.",
    "unauthorized": "The Memmy cloud refused the desktop service's login: run {login} again.",
    "unreachable": "The Memmy desktop service could not reach the Memmy cloud; try again later.",
    "timeout": "The Memmy cloud did not answer in time; try again later.",
    "cloud_error": "The Memmy cloud failed to answer; try again later.",
    "bad_reply": "The Memmy cloud failed to answer; try again later.",
    "rate_limited": "No excerpts this time: Memmy limits how often one account may search, and yours has "
    "searched more than its limit allows just now (your agents' turns and searches together). This is not "
    "an error in your setup; try again in {retry_after} s.",
}
# The service's own error codes that mean the same as a cloud outcome.
_ERROR_CODES: Final = {
    "desktop_logged_out": "logged_out",
    "login_expired": "expired",
    "cloud_login_rejected": "unauthorized",
}


@dataclass(frozen=True)
class KnowledgeBase:
    id: str
    name: str
    owned: bool
    owner: Sharer | None

    def describe(self) -> str:
        """``Handbook (id kb_1, yours)`` or ``Notes (id kb_2, shared by Bob, b***@example.com)``."""
        whose = "yours" if self.owned else f"shared by {sharer(self.owner)}"
        return f"{self.name} (id {self.id}, {whose})"

    def as_json(self) -> ScopeKnowledgeBase:
        return {"id": self.id, "name": self.name, "owned": self.owned, "owner": self.owner}


class LocalService:
    """The desktop service of ``env``'s ``MEMMY_KB_HOME``, asked with its hook token on a connection the
    service proves itself on first (``home.proven``); each call runs on a worker thread."""

    def __init__(
        self, env: Mapping[str, str], *, timeout: float = TIMEOUT_SECONDS, connect: ConnectTo | None = None
    ) -> None:
        self.state_dir = paths.desktop_dir(env)
        self.timeout = timeout
        self.connect = connect  # tests hand in connections that answer in-process

    def _command(self, *words: str) -> str:
        """`memmy-kb WORDS` as the person can run it for this service's home (``advice``)."""
        return f"`{command(*words, home=os.path.dirname(self.state_dir))}`"

    def _where(self) -> tuple[int, str]:
        token = paths.read_token(self.state_dir, paths.HOOK_TOKEN_FILE)
        recorded = paths.read_service(self.state_dir)
        if token is None or recorded is None:
            raise ToolRefused(
                f"The Memmy desktop service is not running for {self.state_dir} (no service.json or "
                f"hook-token there): {how_to_start(self.state_dir, with_home=True)} and log it in with "
                f"{self._command('desktop', 'login')}."
            )
        return int(str(recorded["port"])), token

    async def call(self, method: str, path: str, body: RecallRequest | None = None) -> dict[str, Any]:
        """The service's JSON answer to ``method path``, asked once the listener has proven itself;
        ``ToolRefused`` for anything but a usable one."""
        import anyio

        return await anyio.to_thread.run_sync(self._call, method, path, body)

    def _call(self, method: str, path: str, body: RecallRequest | None) -> dict[str, Any]:
        port, token = self._where()
        url = f"http://127.0.0.1:{port}"
        connection = ProvenConnection(port, token, "hook", timeout=self.timeout, connect=self.connect)
        try:
            connection.prove(f"hook token of {self.state_dir}")
            reply = connection.request(method, path, body)
        except NotProven as err:
            raise ToolRefused(f"The Memmy desktop service cannot be reached safely: {err}") from err
        except TimeoutError as err:
            raise ToolRefused(
                f"The Memmy desktop service at {url} did not answer within {self.timeout:g} s."
            ) from err
        except OSError as err:
            raise ToolRefused(
                f"The Memmy desktop service recorded at {url} is not answering: "
                f"{how_to_start(self.state_dir, with_home=True)} (it may have stopped without cleaning up)."
            ) from err
        finally:
            connection.close()
        logger.info("%s %s %s", method, path, reply.status)
        return self._answer(url, path, reply.status, reply.data)

    def _answer(self, url: str, path: str, status: int, data: bytes) -> dict[str, Any]:
        try:
            # Lone surrogates (a JSON escape may carry one) would stop the SDK writing the answer out.
            answer = replace_lone_surrogates(json.loads(data))
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            raise ToolRefused(f"The Memmy desktop service at {url} answered {status} without JSON.")
        cloud = answer.get("cloud")
        if status == 200 and cloud in (None, "ok"):
            return answer
        error = read_error(status, data)
        outcome = cloud if isinstance(cloud, str) and cloud != "ok" else _ERROR_CODES.get(error.code)
        if outcome is not None:
            sentence = CLOUD_SENTENCES.get(outcome, f"The Memmy cloud answered {outcome!r}.")
            wait = answer.get("retry_after")
            retry = wait if type(wait) is int and wait > 0 else 1
            raise ToolRefused(sentence.format(login=self._command("desktop", "login"), retry_after=retry))
        code = "" if error.code == "http_error" else error.code
        raise ToolRefused(self._refusal(url, path, status, code, error.message))

    def _refusal(self, url: str, path: str, status: int, code: str, message: str) -> str:
        token_file = f"{self.state_dir}/{paths.HOOK_TOKEN_FILE}"
        if status == 403 and code == "hook_token_not_allowed":
            return (
                f"The Memmy desktop service at {url} does not let the hook token use {path} (403 "
                "hook_token_not_allowed): the service is older than this MCP server. Update memmy-kb and "
                f"restart the service ({how_to_start(self.state_dir, with_home=True)})."
            )
        if status in (401, 403):
            return (
                f"The Memmy desktop service at {url} refused the hook token in {token_file} ({status}"
                f"{' ' + code if code else ''}). Run this MCP server with the MEMMY_KB_HOME the service "
                f"uses ({self._command('desktop', 'status')} shows it)."
            )
        detail = f" {code}: {message}" if code or message else ""
        return f"The Memmy desktop service at {url} answered {status}{detail}"

    async def knowledge_bases(self) -> list[KnowledgeBase]:
        """The knowledge bases in the caller's recall scope."""
        return (await self.scope())[0]

    async def scope(self) -> tuple[list[KnowledgeBase], int]:
        """The knowledge bases in the recall scope, and how many of the caller's others are not in it."""
        # Its fields read warily all the same: a service of another version may answer another shape.
        answer = cast("ScopeReply", await self.call("GET", KNOWLEDGE_BASES_PATH))
        items = answer.get("knowledge_bases")
        if not isinstance(items, list):
            raise ToolRefused("The Memmy desktop service's list of knowledge bases was not understood.")
        others = answer.get("not_in_recall")
        not_in_recall = others if isinstance(others, int) and not isinstance(others, bool) else 0
        found = []
        for item in items:
            if (
                isinstance(item, dict)
                and isinstance(item.get("id"), str)
                and isinstance(item.get("name"), str)
            ):
                owned = item.get("owned") is True
                found.append(
                    KnowledgeBase(
                        item["id"], item["name"], owned, None if owned else read_owner(item.get("owner"))
                    )
                )
        return found, not_in_recall

    def page(self) -> str:
        """The command that opens the Memmy page, as the person can run it."""
        return self._command("desktop", "open")

    def why_empty(self, not_in_recall: int) -> str:
        """Why the recall scope is empty and what to do, as the page and ``memmy-kb recall`` say it: no
        knowledge base at all (create one, or ask for a share), or none with recall on (turn it on)."""
        page = self.page()
        if not_in_recall:
            return (
                "None of your Memmy knowledge bases takes part in recall: turn Recall on for those to "
                f"search, in the list on the Memmy page ({page})."
            )
        return (
            "You have no Memmy knowledge bases in recall yet: create one and upload files into it (on the "
            f"Memmy page, {page}), or ask a colleague to share theirs with you."
        )

    async def search(
        self, query: str, knowledge_base_ids: Sequence[str] | None, limit: int | None
    ) -> SearchResult:
        """``{"excerpts": [...], "partial": bool}``, each excerpt reduced to the fields the contract names."""
        body: RecallRequest = {"query": query}
        if knowledge_base_ids is not None:
            body["knowledge_base_ids"] = list(knowledge_base_ids)
        if limit is not None:
            body["limit"] = limit
        answer = cast("SearchReply", await self.call("POST", SEARCH_PATH, body))
        items = answer.get("excerpts")
        if not isinstance(items, list):
            raise ToolRefused("The Memmy desktop service's search answer was not understood.")
        excerpts = [
            read_excerpt(item)
            for item in items
            if isinstance(item, dict) and isinstance(item.get("text"), str)
        ]
        found: SearchResult = {"excerpts": excerpts, "partial": answer.get("partial") is True}
        if not excerpts and answer.get("scope_size") == 0 and knowledge_base_ids is None:
            scope, not_in_recall = await self.scope()
            # A scope that is no longer empty changed during the search: asking again will search it.
            found["nothing_searched"] = (
                "Your recall changed meanwhile: ask again." if scope else self.why_empty(not_in_recall)
            )
        return found


def _folded(name: str) -> str:
    """A name as the agent may spell it: any case, composed or not (NFKC), spaces collapsed."""
    return " ".join(unicodedata.normalize("NFKC", name).casefold().split())


def resolve(requested: Sequence[str], scope: Sequence[KnowledgeBase], page: str | None = None) -> list[str]:
    """The ids of ``requested`` (ids or names) inside ``scope``; ``ToolRefused`` naming any that is not
    there, or a name that more than one knowledge base in the scope has. ``page``: the command that opens
    the Memmy page, as the person can run it."""
    if not requested:
        raise ToolRefused(
            "knowledge_bases is empty: leave it out to search every knowledge base in your recall."
        )
    ids: list[str] = []
    unknown: list[str] = []
    for wanted in requested:
        key = wanted.strip()
        matches = [kb for kb in scope if kb.id == key]
        matches = matches or [kb for kb in scope if kb.name == key]
        matches = matches or [kb for kb in scope if _folded(kb.name) == _folded(key)]
        if not matches:
            unknown.append(wanted)
        elif len(matches) > 1:
            choices = "; ".join(kb.describe() for kb in matches)
            raise ToolRefused(
                f"{wanted!r} names {len(matches)} knowledge bases: give the id of one ({choices})."
            )
        elif matches[0].id not in ids:
            ids.append(matches[0].id)
    if unknown:
        names = ", ".join(repr(name) for name in unknown)
        available = "; ".join(kb.describe() for kb in scope) or "none"
        raise ToolRefused(
            f"Not a knowledge base in your recall: {names}. You can search only these: {available}. "
            "(A knowledge base takes part while its Recall switch is on, on the Memmy page: "
            f"{page or '`' + command('desktop', 'open') + '`'}.)"
        )
    if len(ids) > MAX_RECALL_KBS:
        raise ToolRefused(
            f"knowledge_bases names {len(ids)} knowledge bases; a search takes at most {MAX_RECALL_KBS}: "
            "leave it out to search every knowledge base in your recall."
        )
    return ids


def render_knowledge_bases(scope: Sequence[KnowledgeBase], why_empty: str) -> str:
    """The scope for the agent; ``why_empty`` when it is empty (``LocalService.why_empty``)."""
    if not scope:
        return why_empty
    lines = [f"{len(scope)} knowledge base{'s' if len(scope) != 1 else ''} in your recall:"]
    lines += [f"- {kb.describe()}" for kb in scope]
    return "\n".join(lines)
