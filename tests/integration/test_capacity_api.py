"""Capacity (issue 12): the KBs one user may own, and MemOS's own quota counted and alarmed."""

from __future__ import annotations

import json
from http import HTTPStatus

from memmy_kb.settings import get_settings


def create(service, name="产品资料", user="alice"):
    return service.call("POST", "/knowledge-bases", user, body={"name": name})


def test_owning_the_most_kbs_allowed_is_409_with_the_limit_and_asks_memos_nothing(service, monkeypatch):
    monkeypatch.setenv("MAX_KBS_PER_USER", "2")
    get_settings.cache_clear()
    first = create(service, "一").body["id"]
    assert create(service, "二").status == HTTPStatus.CREATED
    created = len(service.memos.state()["knowledge_bases"])
    reply = create(service, "三")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "kb_limit_reached")
    assert "at most 2" in reply.body["error"]["message"]
    assert len(service.memos.state()["knowledge_bases"]) == created
    # Another user has their own allowance; deleting one makes room again.
    assert create(service, "别人的", user="bob").status == HTTPStatus.CREATED
    assert service.call("DELETE", f"/knowledge-bases/{first}").status == HTTPStatus.ACCEPTED
    assert create(service, "三").status == HTTPStatus.CREATED
    assert create(service, "四").status == HTTPStatus.CONFLICT


def test_a_create_racing_past_the_read_is_refused_by_the_transaction_and_its_memos_kb_deleted(
    service, monkeypatch
):
    from memmy_kb.adapters.dynamodb.knowledge_bases import DynamoKnowledgeBaseStore

    monkeypatch.setenv("MAX_KBS_PER_USER", "1")
    get_settings.cache_clear()
    assert create(service, "一").status == HTTPStatus.CREATED
    monkeypatch.setattr(DynamoKnowledgeBaseStore, "count_owned", lambda self, owner_id: 0)
    reply = create(service, "二")
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.CONFLICT, "kb_limit_reached")
    assert len([kb for kb in service.memos.state()["knowledge_bases"] if kb["linked"]]) == 1
    assert [k["name"] for k in service.call("GET", "/knowledge-bases").body["items"]] == ["一"]


def test_memos_quota_exhausted_stays_503_and_is_counted_in_a_metric(service, capsys):
    service.memos.add_fault("/create/knowledgebase", code=40304)
    reply = create(service)
    assert (reply.status, reply.body["error"]["code"]) == (HTTPStatus.SERVICE_UNAVAILABLE, "memos_quota_exhausted")
    documents = [json.loads(line) for line in capsys.readouterr().out.splitlines() if '"_aws"' in line]
    assert any(doc.get("MemosQuotaExhausted") == [1.0] or doc.get("MemosQuotaExhausted") == 1.0 for doc in documents), documents


def test_the_quota_metric_is_alarmed(service):
    alarms = [
        r["Properties"]
        for r in service.template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == "MemosQuotaExhausted"
    ]
    assert len(alarms) == 1
    assert alarms[0]["Threshold"] == 0
