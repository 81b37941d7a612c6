"""An API Gateway HTTP API (payload 2.0) event as Authlib sees a request, and Authlib's answers as the
proxy result Lambda returns.

``HttpEvent`` reads what the server needs of an event: method, path, the query string (repeated
parameters kept: Authlib refuses a repeated one), the headers with lower-case names, the body (decoded
when API Gateway marked it base64), the cookies, the caller's IP address and the domain it was called
at. ``OAuth2Event`` and ``JsonEvent`` are Authlib's ``OAuth2Request`` and ``JsonRequest`` on it, as
Authlib's Flask integration builds them on Flask's request; ``Answer`` is what ``handle_response`` makes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

from authlib.oauth2.rfc6749 import JsonPayload, JsonRequest, OAuth2Payload, OAuth2Request

from memmy_kb.api.mcp_endpoint.events import BadEvent, event_body

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_BODY_BYTES = 64 * 1024


class Headers(Mapping[str, str]):
    """Header values by case-insensitive name (Authlib reads ``Authorization``, API Gateway sends
    ``authorization``)."""

    def __init__(self, values: Mapping[str, str]) -> None:
        self._values = {str(k).lower(): str(v) for k, v in values.items()}

    def __getitem__(self, name: str) -> str:
        return self._values[name.lower()]

    def __iter__(self) -> Iterator[str]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.lower() in self._values


class MultiValues(Mapping[str, str]):
    """Parameters in the order sent: ``[name]`` and ``get`` give the first value, ``getlist`` all."""

    def __init__(self, pairs: Iterable[tuple[str, str]]) -> None:
        self.pairs = list(pairs)
        self._lists: dict[str, list[str]] = defaultdict(list)
        for key, value in self.pairs:
            self._lists[key].append(value)

    def __getitem__(self, key: str) -> str:
        if key not in self._lists:
            raise KeyError(key)
        return self._lists[key][0]

    def __iter__(self) -> Iterator[str]:
        return iter(self._lists)

    def __len__(self) -> int:
        return len(self._lists)

    def getlist(self, key: str) -> list[str]:
        return list(self._lists.get(key, []))


def _pairs(text: str) -> list[tuple[str, str]]:
    try:
        return parse_qsl(text, keep_blank_values=True, strict_parsing=False, errors="strict")
    except (UnicodeDecodeError, ValueError) as err:
        raise BadEvent("The parameters are not UTF-8 URL-encoded text.") from err


@dataclass(frozen=True)
class HttpEvent:
    """What the server reads of one payload-2.0 event."""

    method: str
    path: str
    raw_query: str
    headers: Headers
    body: bytes
    cookies: dict[str, str]
    source_ip: str
    domain: str

    @classmethod
    def of(cls, event: Mapping[str, Any]) -> HttpEvent:
        context = event.get("requestContext") or {}
        http = context.get("http") or {}
        headers = Headers(event.get("headers") or {})
        body = event_body(event)
        if len(body) > MAX_BODY_BYTES:
            raise BadEvent(f"The body may have at most {MAX_BODY_BYTES // 1024} KB.")
        return cls(
            method=str(http.get("method", "")).upper(),
            path=str(http.get("path") or event.get("rawPath") or ""),
            raw_query=str(event.get("rawQueryString") or ""),
            headers=headers,
            body=body,
            cookies=_cookies(event.get("cookies"), headers.get("cookie")),
            source_ip=str(http.get("sourceIp", "")),
            domain=str(context.get("domainName", "")),
        )

    @property
    def query(self) -> MultiValues:
        return MultiValues(_pairs(self.raw_query))

    @property
    def form(self) -> MultiValues:
        """The body's fields when it is a form (nothing otherwise)."""
        kind = self.headers.get("content-type", "").split(";")[0].strip().lower()
        if self.method != "POST" or kind != FORM_TYPE:
            return MultiValues([])
        try:
            text = self.body.decode("utf-8")
        except UnicodeDecodeError as err:
            raise BadEvent("The form is not UTF-8.") from err
        return MultiValues(_pairs(text))

    def json_body(self) -> Any:
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the parser's depth too
            return None

    def url(self, issuer: str) -> str:
        return f"{issuer}{self.path}" + (f"?{self.raw_query}" if self.raw_query else "")


def _cookies(listed: object, header: str | None) -> dict[str, str]:
    """Cookies by name: payload 2.0 lists them in ``cookies``; a ``Cookie`` header is read too. The
    first of a repeated name wins (a browser sends the most specific first)."""
    found: dict[str, str] = {}
    items = [str(c) for c in listed] if isinstance(listed, list) else []
    items += (header or "").split(";")
    for item in items:
        name, sep, value = item.strip().partition("=")
        if sep and name and name not in found:
            found[name] = value.strip()
    return found


class _Payload(OAuth2Payload):  # type: ignore[misc]
    def __init__(self, values: MultiValues) -> None:
        self._values = values

    @property
    def data(self) -> MultiValues:
        return self._values

    @property
    def datalist(self) -> defaultdict[str, list[str]]:
        lists: defaultdict[str, list[str]] = defaultdict(list)
        for key, value in self._values.pairs:
            lists[key].append(value)
        return lists


class OAuth2Event(OAuth2Request):  # type: ignore[misc]
    """Authlib's request on ``values``: the query of a GET, the form of a POST (as Flask's ``values``
    gives them, and the parameters of a stored authorization request when the consent is answered)."""

    def __init__(self, method: str, uri: str, headers: Headers, values: MultiValues, form: MultiValues) -> None:
        super().__init__(method=method, uri=uri, headers=headers)
        self.payload = _Payload(values)
        self._args = values if method == "GET" else MultiValues([])
        self._form = form

    @classmethod
    def of(cls, event: HttpEvent, issuer: str) -> OAuth2Event:
        form = event.form
        values = MultiValues([*event.query.pairs, *form.pairs])
        return cls(event.method, event.url(issuer), event.headers, values, form)

    @property
    def args(self) -> MultiValues:
        return self._args

    @property
    def form(self) -> MultiValues:
        return self._form


class _JsonPayload(JsonPayload):  # type: ignore[misc]
    def __init__(self, data: Any) -> None:
        self._data = data

    @property
    def data(self) -> Any:
        return self._data


class JsonEvent(JsonRequest):  # type: ignore[misc]
    """Authlib's JSON request (client registration) on an event's body."""

    def __init__(self, event: HttpEvent, issuer: str) -> None:
        super().__init__(event.method, event.url(issuer), event.headers)
        self.payload = _JsonPayload(event.json_body())


@dataclass
class Answer:
    """An HTTP answer: status, headers by lower-case name, text body and ``Set-Cookie`` values."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: str = ""
    cookies: list[str] = field(default_factory=list)

    @property
    def location(self) -> str | None:
        return self.headers.get("location")

    @location.setter
    def location(self, value: str) -> None:
        self.headers["location"] = value

    @classmethod
    def of(cls, status: int, payload: Any, headers: Iterable[tuple[str, str]]) -> Answer:
        """What Authlib's ``handle_response`` gets: a dict is JSON, never cached."""
        named = {name.lower(): value for name, value in headers}
        if isinstance(payload, dict):
            named.setdefault("content-type", "application/json")
            named["cache-control"] = "no-store"
            body = json.dumps(payload, ensure_ascii=False)
        else:
            body = "" if payload is None else str(payload)
        return cls(status, named, body)

    def proxy_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "statusCode": self.status,
            "headers": dict(self.headers),
            "body": self.body,
            "isBase64Encoded": False,
        }
        if self.cookies:
            result["cookies"] = list(self.cookies)
        return result


def json_answer(status: int, body: Any, headers: Mapping[str, str] | None = None) -> Answer:
    named = {"content-type": "application/json", "cache-control": "no-store", **(headers or {})}
    return Answer(status, named, json.dumps(body, ensure_ascii=False))
