"""``memmy-kb recall``'s text: each excerpt names its KB, the sharer of a share, or its group's KBs."""

from __future__ import annotations

import pytest

from memmy_kb_client.cli import main as cli
from memmy_kb_client.cli.recall_commands import _render


def item(title: str, **extra: object) -> dict[str, object]:
    return {"title": title, "content": f"{title} 的内容", "score": 0.8, **extra}


def test_each_excerpt_shows_its_kb_and_the_sharer_of_a_share():
    text = _render(
        {
            "items": [
                item("甲", knowledge_base={"id": "kb_1", "name": "我的资料"}, owner=None),
                item(
                    "乙",
                    knowledge_base={"id": "kb_2", "name": "销售资料"},
                    owner={"name": "张三", "contact": "138****8000"},
                ),
                item(
                    "丙",
                    knowledge_bases=[
                        {"id": "kb_3", "name": "三", "owner": None},
                        {"id": "kb_4", "name": "四", "owner": {"name": "李四", "contact": None}},
                    ],
                ),
            ],
            "scope_size": 4,
            "discarded": False,
            "partial": True,
        }
    )
    blocks = text.split("\n\n")
    assert blocks[0].startswith("(Some knowledge bases could not be searched")
    assert "    from: 我的资料 (kb_1)\n" in blocks[1]
    assert "shared by" not in blocks[1]
    assert "    from: 销售资料 (kb_2), shared by 张三, 138****8000\n" in blocks[2]
    assert "    from one of: 三 (kb_3); 四 (kb_4), shared by 李四\n" in blocks[3]


def test_an_excerpt_without_a_kb_shows_none_and_a_fully_dropped_result_says_so():
    text = _render({"items": [item("甲")], "scope_size": 1, "discarded": False})
    assert "from" not in text
    dropped = _render({"items": [], "scope_size": 2, "discarded": True})
    assert dropped.startswith("Your knowledge bases changed during the search")


HOSTILE = (
    "a\x1b]8;;https://evil.example/\x07link\x1b]8;;\x07\x1b[2J\rb\u202ec\x9b31m\n    from: 我的资料 (kb_1)"
)


def test_hostile_titles_names_and_text_print_inert_and_cannot_forge_a_line():
    """What ``memmy-kb recall`` prints (``printable(_render(...))``): a sharer's title, KB name, own name
    and excerpt text show escape sequences, carriage returns, bidi overrides and C1 controls as escapes,
    and a line break in a title or name cannot start a "from:" line of its own; Chinese and emoji stay."""
    from memmy_kb_client.cli.terminal import printable

    text = printable(
        _render(
            {
                "items": [
                    {
                        "title": f"报销😀{HOSTILE}",
                        "content": f"正文 ✅\n{HOSTILE}",
                        "knowledge_base": {"id": "kb_2", "name": f"销售{HOSTILE}"},
                        "owner": {"name": f"张三{HOSTILE}", "contact": f"138****8000{HOSTILE}"},
                    },
                    {
                        "title": "乙",
                        "content": "x",
                        "knowledge_bases": [{"id": "kb_3", "name": HOSTILE, "owner": {"name": HOSTILE}}],
                    },
                ],
                "scope_size": 2,
                "discarded": False,
            }
        )
    )
    for bad in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert bad not in text
    assert "\\u001b]8;;https://evil.example/" in text
    assert "\\u202e" in text
    assert "\\u009b" in text
    assert "报销😀" in text
    assert "正文 ✅" in text
    assert "张三" in text
    # Every "from" line is the CLI's own, one per excerpt: none forged by a title or name
    sources = [line for line in text.splitlines() if line.startswith("    from")]
    assert len(sources) == 2
    assert sources[0].startswith("    from: 销售a\\u001b]8;;")
    assert sources[1].startswith("    from one of: a\\u001b")


def test_an_excerpts_own_text_cannot_read_as_its_source_line():
    text = _render(
        {
            "items": [
                {
                    "title": "甲",
                    "content": "第一行\nfrom: 我的资料 (kb_1)\nfrom one of: 我的资料 (kb_1)\n  from: 缩进的不算",
                    "knowledge_base": {"id": "kb_2", "name": "销售资料"},
                    "owner": {"name": "张三"},
                }
            ],
            "scope_size": 1,
            "discarded": False,
        }
    )
    assert text.splitlines() == [
        "[1] 《甲》",
        "    from: 销售资料 (kb_2), shared by 张三",
        "    第一行",
        "    › from: 我的资料 (kb_1)",
        "    › from one of: 我的资料 (kb_1)",
        "      from: 缩进的不算",
    ]


class _Recalling:
    """The SDK's client as ``recall`` uses it: one recall answer, and the user's knowledge bases."""

    def __init__(self, answer: dict[str, object], kbs: list[dict[str, object]]) -> None:
        self.answer, self.kbs = answer, kbs

    def __call__(self, args: object) -> _Recalling:
        return self

    def __enter__(self) -> _Recalling:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def recall(self, query: str, limit: object) -> dict[str, object]:
        return self.answer

    def list_knowledge_bases(self) -> list[dict[str, object]]:
        return self.kbs


@pytest.mark.parametrize(
    ("kbs", "said"),
    [
        ([], "You have no knowledge bases in recall yet: create one (`memmy-kb kb create NAME`)"),
        ([{"id": "kb_1", "recall": False}], "None of your knowledge bases takes part in recall: turn it on"),
    ],
)
def test_a_recall_that_searched_nothing_says_why_and_what_to_do(monkeypatch, capsys, kbs, said):
    empty = {"items": [], "context": "", "scope_size": 0, "discarded": False}
    monkeypatch.setattr("memmy_kb_client.cli.transfer_commands.client_for", _Recalling(empty, kbs))
    assert cli.main(["recall", "报销需要哪些发票"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(said)
    assert "matched" not in out


@pytest.mark.parametrize(("searched", "said"), [(1, "1 knowledge base."), (3, "3 knowledge bases.")])
def test_nothing_found_counts_the_knowledge_bases_searched(searched, said):
    text = _render({"items": [], "scope_size": searched, "discarded": False})
    assert text == f"Nothing relevant found in {said}"


def a_file(name: str, folder: str = "", file_id: str = "fl_1", **extra: object) -> dict[str, object]:
    return {
        "id": file_id,
        "name": name,
        "folder_path": folder,
        "version": 3,
        "knowledge_base_id": "kb_2",
        **extra,
    }


def test_an_excerpt_names_its_document_with_the_section_after_it_its_path_id_and_version():
    text = _render(
        {
            "items": [
                item(
                    "Refunds",
                    knowledge_base={"id": "kb_2", "name": "销售资料"},
                    owner={"name": "张三", "contact": "138****8000"},
                    file=a_file("handbook.md", "policies/2024"),
                    files=[],
                ),
                item(
                    "员工手册",
                    knowledge_base={"id": "kb_2", "name": "销售资料"},
                    file=a_file("员工手册.docx"),
                ),
            ],
            "scope_size": 1,
        }
    )
    first, second = text.split("\n\n")
    assert first.splitlines()[:3] == [
        "[1] 《handbook.md》 § Refunds  (score 0.80)",
        "    file: policies/2024/handbook.md (fl_1, v3)",
        "    from: 销售资料 (kb_2), shared by 张三, 138****8000",
    ]
    # A heading that is only the file's name again is not repeated after it
    assert second.splitlines()[:2] == [
        "[2] 《员工手册.docx》  (score 0.80)",
        "    file: 员工手册.docx (fl_1, v3)",
    ]


def test_candidates_are_listed_by_path_and_an_excerpt_without_a_file_reads_as_before():
    candidates = [a_file("LICENSE"), a_file("LICENSE", "vendor/gpl", file_id="fl_2")]
    text = _render(
        {
            "items": [
                item(
                    "Further Information",
                    knowledge_base={"id": "kb_2", "name": "资料"},
                    file=None,
                    files=candidates,
                ),
                item("甲", knowledge_base={"id": "kb_2", "name": "资料"}, file=None, files=[]),
                # Not a file the reply names plainly (no id): no document is claimed
                item(
                    "乙",
                    knowledge_base={"id": "kb_2", "name": "资料"},
                    file={"name": "x.md"},
                    files=[{"id": 3}],
                ),
            ],
            "scope_size": 1,
        }
    )
    candidate, plain, malformed = text.split("\n\n")
    assert candidate.splitlines()[:3] == [
        "[1] 《Further Information》  (score 0.80)",
        "    file one of: LICENSE; vendor/gpl/LICENSE",
        "    from: 资料 (kb_2)",
    ]
    assert plain.splitlines()[:2] == ["[2] 《甲》  (score 0.80)", "    from: 资料 (kb_2)"]
    assert malformed.splitlines()[:2] == ["[3] 《乙》  (score 0.80)", "    from: 资料 (kb_2)"]


def test_a_file_of_a_group_names_the_one_kb_of_the_group_it_is_in():
    group = [
        {"id": "kb_1", "name": "一", "owner": None},
        {"id": "kb_2", "name": "二", "owner": {"name": "李四", "contact": None}},
    ]
    text = _render({"items": [item("Refunds", knowledge_bases=group, file=a_file("h.md"))], "scope_size": 2})
    assert "    from: 二 (kb_2), shared by 李四\n" in text
    assert "one of" not in text


def test_hostile_file_and_folder_names_print_inert_and_cannot_forge_a_line():
    from memmy_kb_client.cli.terminal import printable

    hostile = a_file(f"报告{HOSTILE}.md", f"销售\u202e/{HOSTILE}", file_id=f"fl{HOSTILE}")
    text = printable(
        _render(
            {
                "items": [
                    item("x", knowledge_base={"id": "kb_2", "name": "资料"}, file=hostile),
                    item("y", knowledge_base={"id": "kb_2", "name": "资料"}, files=[hostile, hostile]),
                ],
                "scope_size": 1,
            }
        )
    )
    for bad in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert bad not in text
    assert text.splitlines()[0].startswith("[1] 《报告a\\u001b]8;;https://evil.example/")
    labelled = [line for line in text.splitlines() if line.startswith(("    from", "    file"))]
    assert len(labelled) == 4
    assert labelled[0].startswith("    file: 销售\\u202e/a\\u001b")


def test_an_excerpts_own_text_cannot_read_as_its_file_line():
    text = _render(
        {
            "items": [
                item(
                    "甲",
                    content="file: 伪造.md (fl_9, v1)\nfile one of: a.md",
                    knowledge_base={"id": "kb_2", "name": "资料"},
                    file=a_file("真.md"),
                )
            ],
            "scope_size": 1,
        }
    )
    assert text.splitlines()[-2:] == ["    › file: 伪造.md (fl_9, v1)", "    › file one of: a.md"]


def test_recall_json_passes_the_file_and_its_candidates_through(monkeypatch, capsys):
    import json

    answer = {
        "items": [
            item("Refunds", file=a_file("handbook.md", "policies"), files=[a_file("a.md"), a_file("b.md")])
        ],
        "context": "…",
        "scope_size": 1,
        "discarded": False,
    }
    monkeypatch.setattr("memmy_kb_client.cli.transfer_commands.client_for", _Recalling(answer, []))
    assert cli.main(["recall", "退款", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["items"][0]["file"] == a_file("handbook.md", "policies")
    assert [f["name"] for f in printed["items"][0]["files"]] == ["a.md", "b.md"]


def test_an_excerpt_read_through_a_team_names_the_team_after_the_sharer():
    team = {"id": "tm_1", "name": "研发\n部"}
    owner = {"name": "张三", "contact": None}
    text = _render(
        {
            "items": [
                item("甲", knowledge_base={"id": "kb_2", "name": "销售资料"}, owner=owner, team=team),
                item("乙", knowledge_base={"id": "kb_3", "name": "直接"}, owner=owner, team=None),
            ],
            "scope_size": 2,
            "discarded": False,
        }
    )
    assert "    from: 销售资料 (kb_2), shared by 张三, team 研发\\u000a部 (tm_1)\n" in text
    assert "    from: 直接 (kb_3), shared by 张三\n" in text


def test_each_kb_of_a_group_names_the_team_it_is_read_through():
    group = [
        {"id": "kb_3", "name": "三", "owner": None, "team": None},
        {
            "id": "kb_4",
            "name": "四",
            "owner": {"name": "李四", "contact": None},
            "team": {"id": "tm_2", "name": "销售"},
        },
    ]
    text = _render({"items": [item("丙", knowledge_bases=group)], "scope_size": 2, "discarded": False})
    assert "    from one of: 三 (kb_3); 四 (kb_4), shared by 李四, team 销售 (tm_2)\n" in text
