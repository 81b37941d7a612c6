"""``memmy-kb recall``'s text: each excerpt names its KB, the sharer of a share, or its group's KBs."""

from __future__ import annotations

from memmy_kb_client.recall_commands import _render


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
