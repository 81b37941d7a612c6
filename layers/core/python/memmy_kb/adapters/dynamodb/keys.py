"""The keys of the Memmy table's items, one builder per kind of item (the layout: docs/architecture.md, "Data")."""

from __future__ import annotations

import hashlib
from datetime import datetime

Key = dict[str, str]


def kb_key(kb_id: str) -> Key:
    return {"PK": f"KB#{kb_id}", "SK": "META"}


def grant_key(user_id: str, kb_id: str) -> Key:
    return {"PK": f"USER#{user_id}", "SK": f"KB#{kb_id}"}


def team_key(team_id: str) -> Key:
    """A team's META item (docs/teams.md)."""
    return {"PK": f"TEAM#{team_id}", "SK": "META"}


def membership_key(user_id: str, team_id: str) -> Key:
    """A user's invitation to or membership of a team, in the user's partition beside their grants."""
    return {"PK": f"USER#{user_id}", "SK": f"TEAM#{team_id}"}


def profile_key(user_id: str) -> Key:
    return {"PK": f"USER#{user_id}", "SK": "PROFILE"}


def folder_key(kb_id: str, folder_id: str) -> Key:
    return {"PK": f"KB#{kb_id}", "SK": f"FOLDER#{folder_id}"}


def file_key(kb_id: str, file_id: str) -> Key:
    return {"PK": f"KB#{kb_id}", "SK": f"FILE#{file_id}"}


def upload_key(kb_id: str, upload_id: str) -> Key:
    return {"PK": f"KB#{kb_id}", "SK": f"UPLOAD#{upload_id}"}


def cleanup_key(cleanup_id: str) -> Key:
    """The outbox item of one deletion."""
    return {"PK": f"CLEANUP#{cleanup_id}", "SK": "CLEANUP"}


def cleanup_part_key(cleanup_id: str, part_id: str) -> Key:
    return {"PK": f"CLEANUP#{cleanup_id}", "SK": f"PART#{part_id}"}


def intent_key(kb_id: str) -> Key:
    """A create in flight: written before MemOS is called, removed with the KB's first write."""
    return {"PK": f"INTENT#{kb_id}", "SK": "INTENT"}


def request_key(operation: str, key_hash: str) -> Key:
    """The ``Idempotency-Key`` record of one caller's key for one operation."""
    return {"PK": f"IDEMPOTENCY#{operation}", "SK": f"request#{key_hash}"}


def cursor_key(name: str) -> Key:
    """Where a reconciler pass resumes."""
    return {"PK": "RECONCILE", "SK": f"CURSOR#{name}"}


def lookup_key(kind: str, value: str) -> Key:
    """Points an email or phone at the one account that verified it."""
    return {"PK": f"{kind.upper()}#{value}", "SK": "LOOKUP"}


def activity_key(log_id: str, at: datetime, activity_id: str) -> Key:
    """One entry of an activity log: a partition of its own, sorted by time (newest read first). The log
    of a KB is named by its id, a team's by ``TEAM#<team>`` (``ACTIVITY#TEAM#<team>``)."""
    return {"PK": f"ACTIVITY#{log_id}", "SK": f"{at.isoformat()}#{activity_id}"}


def limit_key(name: str) -> Key:
    """A rate-limit counter (``share#<owner>``, ``members#<owner>``)."""
    return {"PK": f"LIMIT#{name}", "SK": "LIMIT"}


def owned_counter(owner_id: str) -> str:
    """The name of the counter of KBs ``owner_id`` owns (``LIMIT#kbs#<owner>``): creates add, deletes take."""
    return f"kbs#{owner_id}"


def connection_key(user_id: str, connection_id: str) -> Key:
    """A user's connection of an OAuth client to the remote MCP endpoint. Not in ``USER#<user>``: the
    recall Query reads that range on every turn, and IAM can scope the endpoint's writes by partition only."""
    return {"PK": f"MCPCONN#{user_id}", "SK": connection_id}


def connection_log_key(user_id: str, sort: str) -> Key:
    """An entry of a user's connection log: a partition of its own, which the recall Query never reads."""
    return {"PK": f"MCPLOG#{user_id}", "SK": sort}


def mcp_hits_key(user_id: str, search_id: str) -> Key:
    """The stored hits of one MCP search: a partition of its own (the recall Query never reads them)."""
    return {"PK": f"MCPHITS#{user_id}", "SK": search_id}


# -- the authorization server for MCP clients (memmy_kb.adapters.dynamodb.mcp_auth) -----------------------


def mcp_client_key(client_id: str) -> Key:
    """An MCP client, by the SHA-256 of its id (a metadata document's id is a URL of up to 2,000 characters)."""
    return {"PK": f"MCPCLIENT#{hashlib.sha256(client_id.encode('utf-8')).hexdigest()}", "SK": "CLIENT"}


def mcp_pending_key(request_id: str) -> Key:
    """A sign-in under way, from the authorization request to the consent."""
    return {"PK": f"MCPAUTH#{request_id}", "SK": "PENDING"}


def mcp_code_key(digest: str) -> Key:
    """An authorization code, by its digest."""
    return {"PK": f"MCPCODE#{digest}", "SK": "CODE"}


def mcp_refresh_key(digest: str) -> Key:
    """A refresh token, by its digest."""
    return {"PK": f"MCPRT#{digest}", "SK": "REFRESH"}


def mcp_family_key(family: str) -> Key:
    """A refresh token family: the rotations of one grant; its item exists once the family is revoked."""
    return {"PK": f"MCPFAM#{family}", "SK": "FAMILY"}


def mcp_registration_key(source: str, hour: int) -> Key:
    """The registrations from ``source`` (an IP address, or ``*`` for all) in the hour starting at ``hour``."""
    return {"PK": f"MCPREG#{source}", "SK": str(hour)}
