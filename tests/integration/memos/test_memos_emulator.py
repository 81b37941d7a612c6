"""The emulator's wire behaviour, over raw HTTP, against docs/memos.md."""

from __future__ import annotations

import base64
import time
from http import HTTPStatus

import httpx
import pytest

from memmy_local.memos_emulator.config import EmulatorConfig
from memmy_local.memos_emulator.server import MemosEmulator
from tests.support import docgen
from tests.support.emulator_api import add_md, api_client, code_of, create_kb, data_url, ok, search, wait_done

pytestmark = pytest.mark.usefixtures("memos_emulator")


@pytest.fixture
def api(memos_emulator):
    with api_client(memos_emulator.base_url, memos_emulator.api_key) as call:
        yield call


# -- auth and envelope ---------------------------------------------------------------------------


def test_missing_and_invalid_keys_are_refused(memos_emulator):
    url = memos_emulator.base_url + "/create/knowledgebase"
    missing = httpx.post(url, json={"knowledgebase_name": "x"})
    wrong = httpx.post(url, json={"knowledgebase_name": "x"}, headers={"Authorization": "Token nope"})
    assert (missing.status_code, code_of(missing)) == (HTTPStatus.UNAUTHORIZED, 40100)
    assert (wrong.status_code, code_of(wrong)) == (HTTPStatus.UNAUTHORIZED, 40132)


def test_malformed_body_is_http_400(memos_emulator, api):
    resp = api(
        "/create/knowledgebase", None, content=b"{not json", headers={"Content-Type": "application/json"}
    )
    assert (resp.status_code, code_of(resp)) == (HTTPStatus.BAD_REQUEST, 40000)


def test_business_errors_arrive_with_http_200(api):
    resp = api("/create/knowledgebase", {"knowledgebase_name": None, "unexpected": 1})
    assert (resp.status_code, code_of(resp)) == (HTTPStatus.OK, 40002)


def test_create_ignores_extra_fields_and_null_description(api, memos_emulator):
    kb_id = ok(
        api(
            "/create/knowledgebase", {"knowledgebase_name": "手册", "knowledgebase_description": None, "x": 1}
        )
    )["id"]
    kbs = memos_emulator.state()["knowledge_bases"]
    assert [(k["id"], k["name"], k["linked"]) for k in kbs] == [(kb_id, "手册", True)]


# -- files ---------------------------------------------------------------------------------------


def test_file_goes_from_running_to_completed(api, memos_emulator):
    kb_id = create_kb(api)
    added = ok(
        api(
            "/add/knowledgebase-file",
            {"knowledgebase_id": kb_id, "file": [{"content": data_url(b"# T\nhello"), "name": "a.md"}]},
        )
    )
    assert added[0]["status"] == "running"
    assert len(added[0]["id"]) == 32
    assert wait_done(api, [added[0]["id"]])[0]["status"] == "completed"
    state_files = memos_emulator.state()["knowledge_bases"][0]["files"]
    assert [(f["name"], f["status"]) for f in state_files] == [("a.md", "completed")]


def test_bare_base64_and_unparseable_files(api):
    kb_id = create_kb(api)
    good = base64.b64encode("纯文本内容".encode()).decode()
    files = ok(
        api(
            "/add/knowledgebase-file",
            {
                "knowledgebase_id": kb_id,
                "file": [
                    {"content": good, "name": "a.txt"},
                    {"content": base64.b64encode(b"MZ\x90\x00binary").decode(), "name": "fake.pdf"},
                ],
            },
        )
    )
    done = {f["name"]: f["status"] for f in wait_done(api, [f["id"] for f in files])}
    assert done == {"a.txt": "completed", "fake.pdf": "failed"}


@pytest.mark.parametrize(
    ("file", "code"),
    [
        ({"content": "data:text/plain;base64,@@@", "name": "a.txt"}, 40008),
        ({"content": "data:text/plain,plain", "name": "a.txt"}, 40008),
        ({"content": "not base64 at all!", "name": "a.txt"}, 40009),
        ({"content": data_url(b"x"), "name": "a.exe"}, 50107),
        ({"content": data_url(b"x"), "name": "noext"}, 50107),
        ({"name": "a.txt"}, 40002),
    ],
)
def test_add_file_content_errors(api, file, code):
    kb_id = create_kb(api)
    assert code_of(api("/add/knowledgebase-file", {"knowledgebase_id": kb_id, "file": [file]})) == code


def test_add_file_request_limits(api):
    kb_id = create_kb(api)
    one = {"content": data_url(b"x"), "name": "a.txt"}
    assert code_of(api("/add/knowledgebase-file", {"knowledgebase_id": kb_id, "file": [one] * 21})) == 50103
    assert code_of(api("/add/knowledgebase-file", {"knowledgebase_id": kb_id, "file": []})) == 40003
    big = base64.b64encode(b"a" * (100 * 1024 * 1024 + 1)).decode()
    assert (
        code_of(
            api(
                "/add/knowledgebase-file",
                {"knowledgebase_id": kb_id, "file": [{"content": big, "name": "b.txt"}]},
            )
        )
        == 50104
    )
    assert memos_state_files(api, kb_id) == 0


def test_request_total_limit_refuses_the_whole_request():
    config = EmulatorConfig(
        port=0, api_keys={"k": "p"}, processing_delay=0, max_file_bytes=1000, max_request_file_bytes=2500
    )
    with (
        MemosEmulator(config) as emulator,
        httpx.Client(base_url=emulator.base_url, headers={"Authorization": "Token k"}) as client,
    ):

        def api(endpoint, body):
            return client.post(endpoint, json=body)

        kb_id = create_kb(api)
        three = [{"content": base64.b64encode(b"a" * 1000).decode(), "name": f"n{i}.txt"} for i in range(3)]
        assert code_of(api("/add/knowledgebase-file", {"knowledgebase_id": kb_id, "file": three})) == 50105
        assert memos_state_files(api, kb_id) == 0
        assert code_of(api("/add/knowledgebase-file", {"knowledgebase_id": kb_id, "file": three[:2]})) == 0


def memos_state_files(api, kb_id: str) -> int:
    return ok(api("/get/knowledgebase-file", {"knowledgebase_id": kb_id}))["total"]


def test_url_content_is_fetched_from_loopback_only(api, memos_emulator):
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            body = "从网址获取的文档".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        kb_id = create_kb(api)
        url = f"http://127.0.0.1:{server.server_address[1]}/docs/%E8%AF%B4%E6%98%8E.txt?X-Amz-Signature=abc"
        files = ok(
            api(
                "/add/knowledgebase-file",
                {
                    "knowledgebase_id": kb_id,
                    "file": [{"content": url}, {"content": "https://example.com/a.txt"}],
                },
            )
        )
        assert files[0]["name"] == "说明.txt"
        done = wait_done(api, [f["id"] for f in files])
        assert [f["status"] for f in done] == ["completed", "failed"]
    finally:
        server.shutdown()


def test_get_file_modes(api):
    kb_id = create_kb(api)
    ids = [add_md(api, kb_id, f"f{i}.md", f"text {i}") for i in range(5)]
    assert code_of(api("/get/knowledgebase-file", {"file_ids": ids, "knowledgebase_id": kb_id})) == 40000
    assert code_of(api("/get/knowledgebase-file", {"file_ids": None, "knowledgebase_id": None})) == 40002
    by_ids = ok(api("/get/knowledgebase-file", {"file_ids": [ids[3], "0" * 32], "knowledgebase_id": None}))
    assert [f["id"] for f in by_ids["file_detail_list"]] == [ids[3]]
    page2 = ok(api("/get/knowledgebase-file", {"knowledgebase_id": kb_id, "page": 2, "page_size": 2}))
    assert (page2["total"], page2["page"], page2["page_size"]) == (5, 2, 2)
    assert [f["id"] for f in page2["file_detail_list"]] == ids[2:4]
    detail = page2["file_detail_list"][0]
    assert set(detail) >= {"id", "type", "name", "size", "status"}
    assert isinstance(detail["size"], str)
    assert code_of(api("/get/knowledgebase-file", {"knowledgebase_id": kb_id, "page_size": 101})) == 40000


def test_delete_file_removes_it_from_search(api):
    kb_id = create_kb(api)
    file_id = add_md(api, kb_id, "a.md", "# 报销\n差旅报销需要发票原件")
    wait_done(api, [file_id])
    assert search(api, [kb_id], "差旅报销")
    assert ok(
        api("/delete/knowledgebase-file", {"file_ids": [file_id, "f" * 32], "knowledgebase_id": kb_id})
    ) == {"success": True}
    assert search(api, [kb_id], "差旅报销") == []


# -- knowledge bases -----------------------------------------------------------------------------


def test_unlink_keeps_files_but_answers_50123(api, memos_emulator):
    kb_id = create_kb(api)
    wait_done(api, [add_md(api, kb_id, "a.md", "unlinked excerpt about penguins")])
    assert ok(api("/delete/knowledgebase", {"knowledgebase_id": kb_id})) == {"success": True}
    assert (
        code_of(api("/search/memory", {"user_id": "u", "query": "penguins", "knowledgebase_ids": [kb_id]}))
        == 50123
    )
    assert code_of(api("/get/knowledgebase-file", {"knowledgebase_id": kb_id})) == 50123
    assert code_of(api("/delete/knowledgebase", {"knowledgebase_id": kb_id, "delete_all": True})) == 50123
    kb = memos_emulator.state()["knowledge_bases"][0]
    assert (kb["linked"], len(kb["files"])) == (False, 1)


def test_delete_all_removes_kb_and_files(api, memos_emulator):
    kb_id = create_kb(api)
    wait_done(api, [add_md(api, kb_id, "a.md", "gone soon")])
    ok(api("/delete/knowledgebase", {"knowledgebase_id": kb_id, "delete_all": True}))
    assert memos_emulator.state()["knowledge_bases"] == []
    assert code_of(api("/delete/knowledgebase", {"knowledgebase_id": kb_id, "delete_all": True})) == 50120


def test_unknown_kb_is_50120_and_other_projects_kb_is_50123(api, memos_emulator):
    assert (
        code_of(
            api(
                "/add/knowledgebase-file",
                {"knowledgebase_id": "0" * 32, "file": [{"content": data_url(b"x"), "name": "a.md"}]},
            )
        )
        == 50120
    )
    foreign = httpx.post(
        memos_emulator.base_url + "/create/knowledgebase",
        json={"knowledgebase_name": "theirs"},
        headers={"Authorization": f"Token {memos_emulator.other_project_key}"},
    ).json()["data"]["id"]
    assert (
        code_of(api("/search/memory", {"user_id": "u", "query": "x", "knowledgebase_ids": [foreign]}))
        == 50123
    )


# -- search --------------------------------------------------------------------------------------

COMPARISON = """# MemOS 开源版与商业版的区别
开源版可以自行部署，免费使用，需要自己维护服务器和升级。
商业版提供托管云服务、企业级权限管理、技术支持和服务等级协议。
"""
INTRO = """# MemOS 产品介绍
MemOS 是一个面向大模型应用的记忆操作系统，提供记忆的存储、检索和管理能力。
"""
EXPENSES = """# Travel expenses
Employees must submit receipts within 30 days. Hotel costs are reimbursed up to the city limit.
"""


@pytest.fixture
def corpus(api) -> dict[str, str]:
    kb_id = create_kb(api, "product")
    ids = [
        add_md(api, kb_id, "MemOS 开源VS商业化.md", COMPARISON),
        add_md(api, kb_id, "MemOS产品介绍.md", INTRO),
        add_md(api, kb_id, "expenses.md", EXPENSES),
    ]
    assert {f["status"] for f in wait_done(api, ids)} == {"completed"}
    return {"kb": kb_id}


def test_chinese_question_finds_the_comparison_first(api, corpus):
    items = search(api, [corpus["kb"]], "MemOS 开源版和商业版有什么区别")
    assert items[0]["memory_key"] == "MemOS 开源版与商业版的区别"
    assert "托管云服务" in items[0]["memory_value"]
    assert all(0 <= i["relativity"] <= 1 for i in items)
    assert items == sorted(items, key=lambda i: i["relativity"], reverse=True)
    assert set(items[0]) >= {
        "id",
        "memory_key",
        "memory_value",
        "memory_type",
        "create_time",
        "update_time",
        "conversation_id",
        "status",
        "confidence",
        "tags",
        "relativity",
    }
    assert (items[0]["conversation_id"], items[0]["status"], items[0]["tags"]) == (
        "default_session",
        "activated",
        ["multimodal:file"],
    )


def test_english_question_finds_the_expenses_first(api, corpus):
    items = search(api, [corpus["kb"]], "How many days do I have to submit hotel receipts?")
    assert items[0]["memory_key"] == "Travel expenses"


def test_search_scope_is_exact(api, corpus):
    other = create_kb(api, "other")
    wait_done(api, [add_md(api, other, "secret.md", "# 机密\n商业版的秘密定价方案")])
    assert all(i["memory_key"] != "机密" for i in search(api, [corpus["kb"]], "商业版定价", relativity=0))
    assert search(api, [], "商业版定价", relativity=0) == []
    assert {i["memory_key"] for i in search(api, ["all"], "商业版定价", relativity=0)} >= {"机密"}


def test_unlinked_kb_never_appears_in_all(api, corpus):
    other = create_kb(api, "other")
    wait_done(api, [add_md(api, other, "secret.md", "# 机密\n独角兽项目的机密")])
    ok(api("/delete/knowledgebase", {"knowledgebase_id": other}))
    assert search(api, ["all"], "独角兽项目的机密", relativity=0) == []


@pytest.mark.parametrize(
    ("extra", "code"),
    [
        ({"relativity": 1.5}, 40012),
        ({"relativity": -0.1}, 40012),
        ({"memory_limit_number": 26}, 40000),
        ({"memory_limit_number": 0}, 40000),
        ({"query": None}, 40002),
        ({"user_id": ""}, 40002),
        ({"knowledgebase_ids": "all"}, 40000),
    ],
)
def test_search_parameter_errors(api, corpus, extra, code):
    body = {"user_id": "u", "query": "q", "knowledgebase_ids": [corpus["kb"]], **extra}
    assert code_of(api("/search/memory", body)) == code


def test_search_limit_and_threshold(api, corpus):
    assert len(search(api, [corpus["kb"]], "MemOS", relativity=0, memory_limit_number=1)) == 1
    assert search(api, [corpus["kb"]], "量子引力弦论", relativity=0.45) == []


def test_excerpts_from_every_format_are_searchable(api):
    kb_id = create_kb(api)
    samples = {
        "a.pdf": docgen.make_pdf(["季度销售报告：华东区增长百分之二十"]),
        "b.docx": docgen.make_docx([("人事制度", "年假天数按工龄计算")]),
        "c.doc": docgen.make_doc("旧版文档记录了仓库盘点流程"),
        "d.json": '{"产品": {"名称": "记忆立方", "价格": 99}}'.encode(),
        "e.xml": "<root><item>会议纪要：周五发布上线</item></root>".encode(),
    }
    files = ok(
        api(
            "/add/knowledgebase-file",
            {
                "knowledgebase_id": kb_id,
                "file": [{"content": base64.b64encode(d).decode(), "name": n} for n, d in samples.items()],
            },
        )
    )
    assert {f["name"]: f["status"] for f in wait_done(api, [f["id"] for f in files])} == dict.fromkeys(
        samples, "completed"
    )
    for query, needle in [
        ("华东区销售增长", "华东"),
        ("年假怎么计算", "年假"),
        ("仓库盘点", "盘点"),
        ("记忆立方价格", "记忆立方"),
        ("周五发布", "周五"),
    ]:
        assert needle in search(api, [kb_id], query)[0]["memory_value"], query


# -- inspection and faults -----------------------------------------------------------------------


def test_state_counts_calls_by_endpoint(api, memos_emulator):
    create_kb(api)
    search(api, [], "x")
    state = httpx.get(memos_emulator.root_url + "/_emulator/state").json()
    assert state["calls"] == {"/create/knowledgebase": 1, "/search/memory": 1}


def test_faults_inject_codes_statuses_and_latency(api, memos_emulator):
    root = memos_emulator.root_url
    assert (
        httpx.post(
            root + "/_emulator/faults", json={"endpoint": "/search/memory", "code": 50004, "times": 1}
        ).status_code
        == 201
    )
    assert code_of(api("/search/memory", {"user_id": "u", "query": "q", "knowledgebase_ids": []})) == 50004
    assert code_of(api("/search/memory", {"user_id": "u", "query": "q", "knowledgebase_ids": []})) == 0
    httpx.post(root + "/_emulator/faults", json={"endpoint": "/create/knowledgebase", "http_status": 503})
    assert api("/create/knowledgebase", {"knowledgebase_name": "x"}).status_code == 503
    httpx.delete(root + "/_emulator/faults")
    httpx.post(
        root + "/_emulator/faults", json={"endpoint": "/create/knowledgebase", "latency_ms": 300, "times": 1}
    )
    started = time.monotonic()
    ok(api("/create/knowledgebase", {"knowledgebase_name": "slow"}))
    assert time.monotonic() - started >= 0.3
    assert httpx.post(root + "/_emulator/faults", json={"endpoint": "/nope"}).status_code == 400


def test_fault_probability_zero_never_fires(api, memos_emulator):
    memos_emulator.add_fault("/create/knowledgebase", code=50000, probability=0.0)
    for _ in range(5):
        ok(api("/create/knowledgebase", {"knowledgebase_name": "x"}))
