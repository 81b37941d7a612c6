"""Fetching a client ID metadata document (memmy_kb.adapters.client_metadata): bounded in time, size and
kind, no redirects, and only from a host on the public internet (the Lambda would otherwise fetch from
the instance metadata service or a private address for whoever names one). No traffic leaves the
machine: the web is ``httpx.MockTransport`` and names resolve through a stand-in resolver."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from memmy_kb.adapters.client_metadata import HttpClientMetadata
from memmy_kb.domain.ports.mcp_auth import ClientMetadataProblem

URL = "https://agent.example/oauth/client.json"
PUBLIC = {"agent.example": ["93.184.216.34", "2606:2800:220:1:248:1893:25c8:1946"]}


def fetcher(answer: Callable[[httpx.Request], httpx.Response], names: dict[str, list[str]] | None = None,
            **options: object) -> tuple[HttpClientMetadata, list[str]]:  # fmt: skip
    fetched: list[str] = []

    def web(request: httpx.Request) -> httpx.Response:
        fetched.append(str(request.url))
        return answer(request)

    def resolver(host: str) -> list[str]:
        known = (PUBLIC if names is None else names).get(host)
        if known is None:
            raise OSError("no such host")
        return known

    http = httpx.Client(transport=httpx.MockTransport(web))
    return HttpClientMetadata(http, resolver=resolver, **options), fetched  # type: ignore[arg-type]


def json_answer(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"client_id": URL})


def test_a_document_from_a_public_host_is_fetched_as_bytes() -> None:
    metadata, fetched = fetcher(json_answer)

    assert metadata.fetch(URL) == b'{"client_id":"https://agent.example/oauth/client.json"}'
    assert fetched == [URL]


@pytest.mark.parametrize(
    ("url", "names", "says"),
    [
        ("https://127.0.0.1/c.json", {}, "public DNS name"),
        ("https://[::1]/c.json", {}, "public DNS name"),
        ("https://169.254.169.254/latest/meta-data", {}, "public DNS name"),
        ("https://localhost/c.json", {}, "public DNS name"),
        ("https://api.localhost/c.json", {}, "public DNS name"),
        ("https://intranet.example/c.json", {"intranet.example": ["10.0.0.7"]}, "not on the public internet"),
        ("https://meta.example/c.json", {"meta.example": ["169.254.169.254"]}, "not on the public internet"),
        ("https://loop.example/c.json", {"loop.example": ["127.0.0.1"]}, "not on the public internet"),
        ("https://mixed.example/c.json", {"mixed.example": ["93.184.216.34", "192.168.1.2"]},
         "not on the public internet"),
        ("https://v6.example/c.json", {"v6.example": ["fd00::1"]}, "not on the public internet"),
        ("https://nowhere.example/c.json", {}, "cannot be resolved"),
    ],
)  # fmt: skip
def test_a_host_that_is_not_a_public_name_is_refused_before_any_fetch(
    url: str, names: dict[str, list[str]], says: str
) -> None:
    metadata, fetched = fetcher(json_answer, names)

    with pytest.raises(ClientMetadataProblem, match=says):
        metadata.fetch(url)
    assert fetched == []


def test_loopback_is_fetched_when_allowed_and_private_still_is_not() -> None:
    metadata, fetched = fetcher(json_answer, {"intranet.example": ["10.0.0.7"]}, allow_loopback=True)

    assert metadata.fetch("http://127.0.0.1:9/c.json").startswith(b"{")
    assert metadata.fetch("http://localhost:9/c.json").startswith(b"{")
    with pytest.raises(ClientMetadataProblem, match="not on the public internet"):
        metadata.fetch("https://intranet.example/c.json")
    assert len(fetched) == 2


def test_without_host_checks_any_host_is_fetched() -> None:
    metadata, fetched = fetcher(json_answer, {}, check_hosts=False)

    metadata.fetch("https://unresolvable.example/c.json")
    assert fetched == ["https://unresolvable.example/c.json"]


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (lambda r: httpx.Response(404), "HTTP 404, not 200"),
        (lambda r: httpx.Response(302, headers={"location": "https://elsewhere.example/c.json"}), "HTTP 302"),
        (lambda r: httpx.Response(200, text="<html>", headers={"content-type": "text/html"}), "application/json"),
        (lambda r: httpx.Response(200, content=b" " * (64 * 1024 + 1), headers={"content-type": "application/json"}),
         "larger than 64 KB"),
        (lambda r: (_ for _ in ()).throw(httpx.ConnectError("refused")), r"could not be fetched \(ConnectError\)"),
    ],
    ids=["404", "redirect", "html", "too-large", "unreachable"],
)  # fmt: skip
def test_an_answer_that_is_not_a_small_json_document_says_why(
    answer: Callable[[httpx.Request], httpx.Response], says: str
) -> None:
    metadata, _ = fetcher(answer)

    with pytest.raises(ClientMetadataProblem, match=says):
        metadata.fetch(URL)


def test_a_json_variant_content_type_is_accepted() -> None:
    metadata, _ = fetcher(
        lambda r: httpx.Response(
            200, content=b"{}", headers={"content-type": "application/x+json; charset=utf-8"}
        )
    )

    assert metadata.fetch(URL) == b"{}"


class _Trickle(httpx.SyncByteStream):
    """A body that comes a few bytes at a time, each within httpx's read timeout."""

    def __iter__(self) -> Iterator[bytes]:
        for _ in range(20):
            time.sleep(0.05)
            yield b" "


def test_a_body_that_trickles_past_the_time_limit_is_refused() -> None:
    answer = lambda r: httpx.Response(200, headers={"content-type": "application/json"}, stream=_Trickle())  # noqa: E731
    metadata, _ = fetcher(answer, timeout=0.3)
    started = time.monotonic()

    with pytest.raises(ClientMetadataProblem, match=r"did not arrive within 0\.3 s"):
        metadata.fetch(URL)
    assert time.monotonic() - started < 0.8
