"""The ``search`` and ``fetch`` tools of the remote MCP endpoint, on the recall domain.

``search`` is ``/recall`` for an agent off the desktop: the same per-user limit, the same scope read per
call and re-checked after the search, the same sanitised excerpts and masked contacts
(``memmy_kb.domain.recall.turn``). Its results are stored for an hour under the caller, so that ``fetch``
can return one by its id; ``fetch`` first checks that the caller may still read every KB the result may
come from, so a KB unshared since the search is not returned.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memmy_kb.domain.access import require_access
from memmy_kb.domain.remote_mcp.hits import HITS_TTL_SECONDS, hit_id, new_search_id, parse_hit_id
from memmy_kb.errors import NotFound

if TYPE_CHECKING:
    from memmy_kb.domain.ports.activity import RateCounters
    from memmy_kb.domain.ports.engines import KnowledgeEngines
    from memmy_kb.domain.ports.knowledge_bases import KnowledgeBaseStore
    from memmy_kb.domain.ports.mcp_hits import HitStore, StoredHit
    from memmy_kb.domain.recall.config import RecallConfig
    from memmy_kb.domain.recall.context_block import Excerpt, SourceKb
    from memmy_kb.domain.recall.prints_cache import PrintsCache, RecallFiles
    from memmy_kb.domain.recall.rate_governor import RateGovernor
    from memmy_kb.domain.recall.user_limit import RecallLimiter


@dataclass(frozen=True)
class RecallPorts:
    """What a search needs, as ``/recall`` has it: the stores, MemOS, the recall settings and limits."""

    kbs: KnowledgeBaseStore
    memos: KnowledgeEngines
    config: RecallConfig
    limiter: RecallLimiter
    counters: RateCounters
    hits: HitStore
    governor: RateGovernor | None = None
    files: RecallFiles | None = None
    prints: PrintsCache | None = None


def _sharer(source: SourceKb) -> dict[str, Any] | None:
    if source.owner_name is None:
        return None
    return {"name": source.owner_name, "contact": source.owner_contact}


def _metadata(excerpt: Excerpt) -> dict[str, Any]:
    """Where an excerpt comes from: its KB (with its sharer, or the team it is read through) and its
    file, each when the search told them apart (else null)."""
    source = excerpt.sources[0] if len(excerpt.sources) == 1 else None
    file = excerpt.files[0] if len(excerpt.files) == 1 else None
    return {
        "knowledge_base": None if source is None else {"id": source.kb_id, "name": source.name},
        "sharer": None if source is None else _sharer(source),
        "team": None
        if source is None or source.team_id is None
        else {"id": source.team_id, "name": source.team_name or source.team_id},
        "file": None if file is None else {"id": file.file_id, "name": file.name, "folder_path": file.folder_path},
    }


def _stored(excerpt: Excerpt, scope_ids: tuple[str, ...]) -> StoredHit:
    from memmy_kb.domain.ports.mcp_hits import StoredHit

    metadata = _metadata(excerpt)
    if metadata["file"] is not None:
        title = metadata["file"]["name"]
    elif metadata["knowledge_base"] is not None:
        title = metadata["knowledge_base"]["name"]
    else:
        title = excerpt.title
    # The KBs the caller must still read: its KB, its candidates, or (a search naming none) the scope.
    kb_ids = tuple(s.kb_id for s in excerpt.sources) or scope_ids
    return StoredHit(title=title, text=excerpt.content, metadata=metadata, kb_ids=kb_ids)


def _result(hit: StoredHit, hid: str) -> dict[str, Any]:
    return {"id": hid, "title": hit.title, "text": hit.text, "url": None, **hit.metadata}


def search(
    ports: RecallPorts, user_id: str, query: str, kb_ids: Sequence[str] | None, now: float
) -> dict[str, Any]:
    """The caller's excerpts for ``query`` as the ``search`` tool's result; raises what ``/recall`` raises
    (``TooManyRequests``, ``RecallUnavailable``, ``InvalidInput`` for an id outside the scope)."""
    from memmy_kb.domain.access import narrow_recall_grants, recall_grants
    from memmy_kb.domain.recall import turn
    from memmy_kb.domain.recall.config import RecallQuestion

    ports.limiter.admit(user_id, ports.counters, now)
    question = RecallQuestion(user_id=user_id, query=query, knowledge_base_ids=kb_ids)
    result = turn.recall(
        ports.kbs, ports.memos, question, ports.config,
        governor=ports.governor, files=ports.files, prints=ports.prints,
    )
    excerpts = result.block.excerpts
    scope_ids: tuple[str, ...] = ()
    if any(not e.sources for e in excerpts):  # a search naming no KB (``combined``): the scope it searched
        scope_ids = tuple(g.kb_id for g in narrow_recall_grants(recall_grants(ports.kbs, user_id), kb_ids))
    stored = [_stored(e, scope_ids) for e in excerpts]
    search_id = new_search_id()
    if stored:
        ports.hits.put_hits(user_id, search_id, stored, expires_at=int(now) + HITS_TTL_SECONDS)
    return {"results": [_result(hit, hit_id(search_id, n)) for n, hit in enumerate(stored)]}


def fetch(kbs: KnowledgeBaseStore, hits: HitStore, user_id: str, hid: str, now: float) -> dict[str, Any]:
    """One result of the caller's searches of the last hour, while they may still read its KBs; NotFound
    otherwise (an unknown, expired or foreign id, or a KB they lost since)."""
    parsed = parse_hit_id(hid)
    stored = None if parsed is None else hits.get_hits(user_id, parsed[0], now=int(now))
    if parsed is None or stored is None or parsed[1] >= len(stored):
        raise NotFound("No result with this id: search again.")
    hit = stored[parsed[1]]
    if not hit.kb_ids:  # fails closed: a result no KB vouches for is not returned
        raise NotFound("No result with this id: search again.")
    try:
        for kb_id in hit.kb_ids:
            require_access(kbs, user_id, kb_id)
    except NotFound:
        raise NotFound("No result with this id: search again.") from None
    return {"id": hid, "title": hit.title, "text": hit.text, "url": None, "metadata": hit.metadata}
