"""Search latency of the MemOS emulator over about 10,000 excerpts (Chinese and English), over HTTP."""

from __future__ import annotations

import random
import statistics
import time

import httpx

from memmy_local.memos_emulator.config import EmulatorConfig
from memmy_local.memos_emulator.server import MemosEmulator

TOPIC_ZH = [
    "知识库",
    "检索",
    "文件",
    "共享",
    "权限",
    "部署",
    "商业版",
    "开源版",
    "记忆",
    "模型",
    "销售",
    "报销",
    "发票",
    "合同",
    "客户",
    "会议",
    "项目",
    "进度",
    "预算",
    "服务器",
    "数据",
    "安全",
]
TOPIC_EN = [
    "invoice",
    "contract",
    "customer",
    "meeting",
    "project",
    "budget",
    "server",
    "data",
    "security",
    "travel",
    "hotel",
    "receipt",
    "policy",
]
QUERIES = [
    "MemOS 开源版和商业版有什么区别",
    "差旅报销需要哪些发票",
    "How do I submit hotel receipts?",
    "项目预算审批流程",
]


def _vocabulary(rng: random.Random) -> list[str]:
    """About 5,000 real Chinese words from jieba's dictionary plus the topic words, Zipf-weighted."""
    import jieba

    from memmy_local.memos_emulator import search_text

    search_text._jieba()  # the emulator's own loading of the dictionary, once
    frequencies: dict[str, int] = jieba.dt.FREQ
    common = sorted(
        (w for w, f in frequencies.items() if f > 200 and len(w) > 1),
        key=frequencies.__getitem__,
        reverse=True,
    )
    return TOPIC_ZH + TOPIC_EN + rng.sample(common[:20_000], 5_000)


def _excerpt(rng: random.Random, vocabulary: list[str], weights: list[float], i: int) -> tuple[str, str]:
    words = rng.choices(vocabulary, weights=weights, k=80)
    return f"文档 {i}", "，".join(words) + "。"


def run(excerpts: int = 10_000, searches: int = 200, kbs: int = 50) -> dict[str, float]:
    rng = random.Random(7)
    config = EmulatorConfig(port=0, api_keys={"bench": "bench"}, processing_delay=0)
    with (
        MemosEmulator(config) as emulator,
        httpx.Client(
            base_url=emulator.base_url, headers={"Authorization": "Token bench"}, timeout=30
        ) as client,
    ):
        kb_ids = [
            client.post("/create/knowledgebase", json={"knowledgebase_name": f"kb{i}"}).json()["data"]["id"]
            for i in range(kbs)
        ]
        # Index directly through the store: the benchmark measures search, not parsing.
        vocabulary = _vocabulary(rng)
        weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
        rng.shuffle(vocabulary)
        per_file = 100
        for start in range(0, excerpts, per_file):
            kb_id = kb_ids[(start // per_file) % kbs]
            file = emulator.store.add_file(
                kb_id,
                name=f"f{start}.md",
                type_="document",
                size_bytes=1,
                content=b"",
                url=None,
                ready_at=time.time() + 3600,
            )
            emulator.store.complete_file(
                file.id, [_excerpt(rng, vocabulary, weights, i) for i in range(start, start + per_file)]
            )
        scope = kb_ids[:10]
        timings = []
        for i in range(searches):
            body = {
                "user_id": "kb-reader-bench",
                "query": QUERIES[i % len(QUERIES)],
                "knowledgebase_ids": scope,
                "relativity": 0,
            }
            started = time.perf_counter()
            resp = client.post("/search/memory", json=body)
            timings.append(time.perf_counter() - started)
            assert resp.json()["code"] == 0
        timings.sort()
        result = {
            "excerpts": excerpts,
            "p50_ms": statistics.median(timings) * 1000,
            "p95_ms": timings[int(len(timings) * 0.95)] * 1000,
        }
    print(
        f"emulator search over {excerpts} excerpts in {kbs} KBs (scope 10 KBs), {searches} searches over HTTP: "
        f"p50 {result['p50_ms']:.1f} ms, p95 {result['p95_ms']:.1f} ms"
    )
    return result


if __name__ == "__main__":
    run()
