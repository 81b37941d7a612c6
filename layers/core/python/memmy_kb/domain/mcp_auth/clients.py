"""What an MCP client's metadata may be (docs/remote-mcp.md, "Authorization servers"), for the
service's authorization server and the dev identity provider alike: registered clients (RFC 7591) and
ones named by a client ID metadata document (an https URL). All are public (no secret), use the
authorization code grant with PKCE and refresh tokens, and get the one scope ``kb.search``.

Their redirect URIs are https URLs or loopback http URLs; a loopback one matches a request's at any port
(RFC 8252 7.3), every other one only exactly."""

from __future__ import annotations

import hashlib
import re
import unicodedata
from urllib.parse import urlsplit

from memmy_kb.domain.ports.mcp_auth import ClientMetadataProblem as ClientMetadataProblem
from memmy_kb.domain.ports.mcp_auth import ClientRecord as ClientRecord
from memmy_kb.domain.remote_mcp.tokens import MAX_CLIENT_NAME

MCP_GRANT_TYPES = ("authorization_code", "refresh_token")
MAX_REDIRECT_URIS = 10
MAX_REDIRECT_URI_LENGTH = 2000
APPLICATION_TYPES = ("native", "web")
LOOPBACK_HOSTS = ("127.0.0.1", "::1", "localhost")
REGISTERED = "registered"
METADATA_DOCUMENT = "metadata_document"
# Unicode categories a name shown on the consent page may not hold: controls, format characters (bidi
# overrides among them), private use, surrogates, unassigned, line and paragraph separators.
_HIDDEN_CATEGORIES = frozenset({"Cc", "Cf", "Co", "Cs", "Cn", "Zl", "Zp"})
# A host name or an IP address, as urlsplit gives it (lower case, no brackets): nothing else may reach
# a page's Content-Security-Policy, which names the redirect URI's origin.
_HOST = re.compile(r"[a-z0-9](?:[a-z0-9.-]{0,251}[a-z0-9])?|[0-9a-f:.]{2,45}")


def is_loopback_http(uri: str) -> bool:
    parts = urlsplit(uri)
    return parts.scheme == "http" and parts.hostname in LOOPBACK_HOSTS


def redirect_uri_problem(uri: object) -> str | None:
    """Why ``uri`` cannot be an MCP client's redirect URI, or None: an https URL or a loopback http URL
    (127.0.0.1, [::1] or localhost, any port), absolute, without a fragment or credentials."""
    if not isinstance(uri, str) or not uri:
        return "every redirect URI must be a non-empty string."
    if len(uri) > MAX_REDIRECT_URI_LENGTH:
        return f"a redirect URI may have at most {MAX_REDIRECT_URI_LENGTH} characters."
    try:
        parts = urlsplit(uri)
        parts.port  # noqa: B018 - raises ValueError for a port that is not one
    except ValueError:
        return f"{uri!r} is not a URL."
    if not parts.hostname or parts.fragment or "#" in uri or parts.username is not None:
        return f"{uri!r} must be an absolute URL with a host, no fragment and no user name."
    if not _HOST.fullmatch(parts.hostname):
        return f"{uri!r} has a host name that is not one."
    if parts.scheme == "https" or is_loopback_http(uri):
        return None
    return f"{uri!r} is neither an https URL nor a loopback http URL (http://127.0.0.1:PORT/...)."


def origin(uri: str) -> str:
    """``scheme://host[:port]`` of a redirect URI that ``redirect_uri_problem`` accepted."""
    parts = urlsplit(uri)
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    return f"{parts.scheme}://{host}" + (f":{parts.port}" if parts.port else "")


def redirect_uri_matches(registered: str, requested: str) -> bool:
    """The same URI, or (RFC 8252 7.3) the same loopback http URI at another port."""
    if registered == requested:
        return True
    if not (is_loopback_http(registered) and is_loopback_http(requested)):
        return False
    try:
        mine, theirs = urlsplit(registered), urlsplit(requested)
        their_port = theirs.port
    except ValueError:
        return False
    same = (mine.hostname, mine.path, mine.query) == (theirs.hostname, theirs.path, theirs.query)
    return same and their_port is not None and not theirs.fragment


def clean_client_name(raw: object) -> str | None:
    """The name to show for a client: without control, format or hidden characters, runs of white space
    made one space; None when nothing is left. Longer than ``MAX_CLIENT_NAME`` characters is refused."""
    if raw is None:
        return None
    if not isinstance(raw, str):
        raise ClientMetadataProblem("client_name must be a string.", "client_name")
    shown = "".join(c for c in raw if unicodedata.category(c) not in _HIDDEN_CATEGORIES)
    name = " ".join(shown.split())
    if len(name) > MAX_CLIENT_NAME:
        raise ClientMetadataProblem(
            f"client_name may have at most {MAX_CLIENT_NAME} characters.", "client_name"
        )
    return name or None


def checked_redirect_uris(value: object) -> tuple[str, ...]:
    """The ``redirect_uris`` metadata, checked (``ClientMetadataProblem`` otherwise)."""
    if not isinstance(value, list) or not value:
        raise ClientMetadataProblem("redirect_uris must be a non-empty list of URLs.", "redirect_uris")
    if len(value) > MAX_REDIRECT_URIS:
        raise ClientMetadataProblem(
            f"at most {MAX_REDIRECT_URIS} redirect_uris are accepted.", "redirect_uris"
        )
    for uri in value:
        problem = redirect_uri_problem(uri)
        if problem is not None:
            raise ClientMetadataProblem(f"redirect_uris: {problem}", "redirect_uris")
    return tuple(value)


def checked_application_type(value: object) -> str:
    if value is None:
        return "native"
    if value not in APPLICATION_TYPES:
        raise ClientMetadataProblem("application_type must be 'native' or 'web'.", "application_type")
    return str(value)


def digest(text: str) -> str:
    """The SHA-256 of ``text`` in hex: how codes, refresh tokens, consent tokens and client ids are kept."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
