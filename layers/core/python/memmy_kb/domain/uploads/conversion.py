"""HTML to Markdown, for MemOS, which parses Markdown but not HTML (docs/memos.md): the converter is
``markdownify`` (on BeautifulSoup with Python's own ``html.parser``: nothing fetched, no script run).
Scripts, styles and what a page shows no reader (``head``, ``template``, ``noscript``) are dropped with
their text; links stay Markdown links, an image becomes its alt text (its source, perhaps a long data
URL, says nothing)."""

from __future__ import annotations

from typing import Final

# Elements whose text is no part of what the page says.
_DROPPED: Final = ("script", "style", "head", "template", "noscript", "iframe", "object", "svg")


def html_to_markdown(html: str) -> str:
    """The Markdown of an HTML document (headings as ``#``, lists, tables, emphasis), its text otherwise
    as it reads."""
    from bs4 import BeautifulSoup
    from markdownify import MarkdownConverter

    soup = BeautifulSoup(html, "html.parser")
    for element in soup.find_all(_DROPPED):
        element.decompose()
    for image in soup.find_all("img"):
        image.replace_with(str(image.get("alt") or ""))
    markdown: str = MarkdownConverter(heading_style="ATX").convert_soup(soup)
    lines = [line.rstrip() for line in markdown.splitlines()]
    # Runs of blank lines (whitespace between block elements) become one.
    kept = [line for index, line in enumerate(lines) if line or (index > 0 and lines[index - 1])]
    return "\n".join(kept).strip() + "\n"
