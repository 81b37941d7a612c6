"""Every script of the client's pages is an ES module from a file: `<script type="module" src=...>`, never a
classic script (whose top-level names are globals every other script shares) and never inline (the
Content-Security-Policy allows scripts from 'self' only)."""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


class _Scripts(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[dict[str, str | None]] = []
        self._inline: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self.tags.append(dict(attrs))
            self._inline = self.tags[-1]

    def handle_data(self, data: str) -> None:
        if self._inline is not None and data.strip():
            self._inline["inline"] = data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._inline = None


def not_modules(html: str) -> list[str]:
    """Each script of ``html`` that is not a module loaded from a file, as it reads."""
    scripts = _Scripts()
    scripts.feed(html)
    return [
        str(tag)
        for tag in scripts.tags
        if tag.get("type") != "module" or not tag.get("src") or "inline" in tag
    ]


def test_every_script_of_the_clients_pages_is_a_module():
    pages = sorted(ROOT.glob("client/**/*.html"))
    assert pages, "no page found under client/"
    for page in pages:
        assert not_modules(page.read_text(encoding="utf-8")) == [], page
    assert any("<script" in page.read_text(encoding="utf-8") for page in pages), "no page has a script"


def test_a_classic_or_inline_script_is_found():
    assert not_modules('<script type="module" src="/app.js"></script>') == []
    assert len(not_modules('<script src="/app.js" defer></script>')) == 1
    assert len(not_modules('<script type="text/javascript" src="/a.js"></script>')) == 1
    assert len(not_modules('<script type="module">start()</script>')) == 1
    assert len(not_modules("<SCRIPT>alert(1)</SCRIPT>")) == 1
