"""The import drawings of docs/architecture.md ("Import drawings") are the source's: each marked drawing is
what tests/support/import_drawing.py draws of this checkout now.

When one fails, the imports changed: redraw with
``.venv/bin/python -m tests.support.import_drawing --update docs/architecture.md`` and read the new drawing
before committing it.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.support.import_drawing import PACKAGES, drawing, graph, main, marked_drawings, updated

ROOT = Path(__file__).resolve().parents[3]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
REDRAW = "redraw: .venv/bin/python -m tests.support.import_drawing --update docs/architecture.md"


def test_the_document_marks_a_drawing_of_each_package():
    assert set(marked_drawings(ARCHITECTURE.read_text(encoding="utf-8"))) == set(PACKAGES)


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_the_drawing_in_the_document_is_the_source_s(name):
    in_document = marked_drawings(ARCHITECTURE.read_text(encoding="utf-8"))[name]
    assert in_document == drawing(name), REDRAW


def test_an_edited_drawing_differs_and_update_restores_it():
    document = ARCHITECTURE.read_text(encoding="utf-8")
    arrow = "    uploads_pkg --> deletion_pkg\n"
    assert arrow in marked_drawings(document)["domain"]
    edited = document.replace(arrow, "", 1)
    assert marked_drawings(edited)["domain"] != drawing("domain")
    assert updated(edited) == document


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


DOMAIN = "layers/core/python/memmy_kb/domain"


def test_a_part_is_a_subpackage_or_a_module_and_an_arrow_counts_the_imports_behind_it(tmp_path):
    _write(
        tmp_path,
        {
            f"{DOMAIN}/__init__.py": '"""Imports nothing."""\n',
            f"{DOMAIN}/shared.py": "import json\nfrom memmy_kb import errors\n",
            f"{DOMAIN}/ports.py": "from memmy_kb.domain.shared import X\n",
            f"{DOMAIN}/feature/__init__.py": "",
            # Two modules of feature/ import shared.py (one in a function); one imports the other (not drawn).
            f"{DOMAIN}/feature/one.py": "from memmy_kb.domain import shared\nfrom . import two\n",
            f"{DOMAIN}/feature/two.py": "def f():\n    import memmy_kb.domain.shared\n",
            f"{DOMAIN}/other/__init__.py": "",
            f"{DOMAIN}/other/three.py": "from memmy_kb.domain.feature.one import Y\nfrom memmy_kb.domain import ports\n",
        },
    )
    drawn = graph("domain", tmp_path)
    assert drawn.parts == ("feature/", "other/", "ports.py", "shared.py")
    assert drawn.arrows == {
        ("feature/", "shared.py"): 2,
        ("other/", "feature/"): 1,
        ("other/", "ports.py"): 1,
        ("ports.py", "shared.py"): 1,
    }
    assert drawing("domain", tmp_path) == (
        "flowchart TD\n"
        "    %% 4 parts, 4 arrows, 5 module imports between parts\n"
        '    feature_pkg["feature/"]\n'
        '    other_pkg["other/"]\n'
        '    ports_mod("ports.py")\n'
        '    shared_mod("shared.py")\n'
        "    feature_pkg -->|2| shared_mod\n"
        "    other_pkg --> feature_pkg\n"
        "    other_pkg --> ports_mod\n"
        "    ports_mod --> shared_mod\n"
    )


def test_update_rewrites_only_the_marked_drawings(tmp_path):
    _write(tmp_path, {f"{DOMAIN}/a.py": "from memmy_kb.domain import b\n", f"{DOMAIN}/b.py": ""})
    document = (
        "# Doc\n\n```mermaid\nflowchart TD\n    x --> y\n```\n\n"
        "<!-- import drawing: domain -->\n```mermaid\nflowchart TD\n    stale\n```\n\nAfter.\n"
    )
    assert updated(document, tmp_path) == (
        "# Doc\n\n```mermaid\nflowchart TD\n    x --> y\n```\n\n"
        "<!-- import drawing: domain -->\n```mermaid\n" + drawing("domain", tmp_path) + "```\n\nAfter.\n"
    )


def test_a_drawing_of_an_unknown_package_or_marked_twice_is_refused():
    block = "<!-- import drawing: {} -->\n```mermaid\n```\n"
    with pytest.raises(ValueError, match="'lambdas'"):
        updated(block.format("lambdas"))
    with pytest.raises(ValueError, match="marked twice"):
        marked_drawings(block.format("domain") + block.format("domain"))


def test_a_folder_that_is_no_checkout_gets_a_sentence_and_exit_2(tmp_path, capsys):
    assert main(["domain", "--root", str(tmp_path)]) == 2
    assert "is not a folder: is" in capsys.readouterr().err


def test_finding_the_drawings_is_linear_in_the_document_even_when_no_block_closes():
    # 20,000 markers whose blocks never close (about 1 MB): each is given up at the next fence line. The
    # pattern that ran to the document's end for each took minutes here; this takes milliseconds.
    document = "<!-- import drawing: domain -->\n```mermaid\n    a --> b\n" * 20_000
    started = time.perf_counter()
    assert marked_drawings(document) == {}
    assert time.perf_counter() - started < 1.0
