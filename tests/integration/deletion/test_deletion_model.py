"""Deletion under crashes and faults: after reconcile, Memmy, MemOS and S3 agree again.

Two kinds of evidence, both checked by one helper, ``assert_consistent``:

* **Kill points.** A crash (``Killed``, a ``BaseException`` nothing in the service may catch, as a Lambda
  timeout or an out-of-memory kill) is injected once before or after one adapter call of one flow: the
  ingest of an upload, the ingest of a replace (a file's next version), the DELETE of a file, a folder or
  a KB, or a cleanup round. The crashed flow is
  finished as AWS would: a crashed request is retried by the client, a crashed ingest invocation's SQS
  message comes back, a crashed cleanup execution is caught by the state machine and its outbox item is
  marked failed. Then the system settles (the queue drained, the reconciler run with its clock past
  every grace period, every cleanup execution it started run) and nothing may be left behind. Right
  after the folder DELETE, its subtree must also be gone for the user: no listing of, upload into or
  move into any of its folders, whatever the sweep got to before the crash.
* **A stateful property test.** Random interleavings of creates, uploads, deletes, MemOS faults, crashes,
  cleanup runs and reconciler runs against a model of what is live: nothing deleted is ever visible again
  (KB list, recall scope, file and folder listings; a deleted KB or folder, subfolders included, lists as
  404), nothing live disappears, and at the end ``assert_consistent`` holds. Replaces run among them: at
  the end a file answers recall with the words of its recorded version only, never the replaced ones.
  Teams run among them: a team (bob a member, carol invited) shares one of the KBs and may be deleted,
  its delete or its cleanup crashing between any two writes; after every step bob reads (his list and his
  recall's scope) exactly what the live teams share, no teams counter is below the live teams, and at
  the end nothing of a deleted team is left and each counter is exact.

* **A late arrival.** The bytes of an upload arrive after its KB's cleanup emptied S3 and before its
  table step, the ingest running before, during (the table step landing in its hold or its rejection) or
  after that step, or never: no object of the KB remains once the reconciler has run.

The kill points and the late arrivals are test_deletion_kill_points.py; what plays AWS here, and the
consistency check with its S3 rule, are tests/support/aws_runtime.py and tests/support/consistency.py.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any

import boto3
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from memmy_kb.adapters.dynamodb.cleanups import DynamoCleanupStore
from memmy_kb.adapters.dynamodb.contents import DynamoContentStore
from memmy_kb.adapters.dynamodb.teams import DynamoTeamStore
from memmy_kb.adapters.memos.client import MemosClient
from memmy_kb.adapters.s3 import UploadStorage
from memmy_kb.adapters.stepfunctions import CleanupStateMachine
from memmy_kb.composition import reset_composition
from memmy_kb.domain.knowledge_bases.files import GONE_FROM_MEMOS
from tests.support.aws_runtime import Executions, Schedule, deliver, sqs_client
from tests.support.consistency import assert_consistent, bucket_keys, settle, table_items
from tests.support.crashes import Killer, Target
from tests.support.deletion_flows import (
    ADD,
    DELETE_FILES,
    DELETE_KB,
    UPDATE,
    counter,
    delete,
    kb_ids_listed,
    md,
    new_folder,
    on_two_backends,
    reads,
    recall_problems,
    team_residue,
    upload_bytes,
)
from tests.support.sharing import register
from tests.support.teams import share_with_team
from tests.support.teams_api import create_team, invite, join
from tests.support.uploads import REGION, create_kb, post_file

__all__ = ["on_two_backends"]  # the autouse fixture: every case on two MemOS backends


# -- 2. the stateful model --------------------------------------------------------------------------------

# What may go wrong during each kind of step: MemOS answering 50004 for a while (the fault outlives the
# step), or the process dying before or after one adapter call (the crash fires on the next such call,
# in this step or a later one). None of these methods is used by the read paths the invariants call.
Trouble = tuple[str, Any, Any] | None


def _crashes(*targets: Target) -> list[Trouble]:
    return [("crash", target, when) for target in targets for when in ("before", "after")]


def _faults(*endpoints: str) -> list[Trouble]:
    return [("fault", endpoint, times) for endpoint in endpoints for times in (1, 3)]


INGEST_TROUBLE = [
    *_faults(ADD),
    *_crashes(
        (MemosClient, "add_knowledgebase_files"),
        (DynamoContentStore, "update_upload_submitting"),
        (DynamoContentStore, "put_file_for_upload"),
    ),
]
DELETE_TROUBLE = _crashes(
    (DynamoCleanupStore, "delete_file_with_outbox"),
    (DynamoCleanupStore, "delete_folder_with_outbox"),
    (DynamoCleanupStore, "delete_kb_with_outbox"),
    (DynamoContentStore, "update_upload_rejected"),
    (DynamoCleanupStore, "delete_files_with_part"),
    (DynamoCleanupStore, "delete_folders"),
    (CleanupStateMachine, "start"),
)
CLEANUP_TROUBLE = [
    *_faults(DELETE_FILES, DELETE_KB),
    *_crashes(
        (DynamoCleanupStore, "get_cleanup"),
        (MemosClient, "delete_knowledgebase_files"),
        (MemosClient, "delete_knowledgebase"),
        (UploadStorage, "delete"),
        (UploadStorage, "delete_prefix"),
        (DynamoCleanupStore, "delete_kb_items"),
        (DynamoCleanupStore, "delete_cleanup_parts"),
    ),
]
REPLACE_TROUBLE = [
    *_faults(UPDATE),
    *_crashes(
        (MemosClient, "update_knowledgebase_file"),
        (DynamoContentStore, "update_replacement_submitting"),
        (DynamoContentStore, "put_file_version"),
    ),
]
RECONCILE_TROUBLE = [
    *_faults(DELETE_FILES),
    *_crashes(
        (CleanupStateMachine, "start"),
        (DynamoContentStore, "update_upload_rejected"),
        (DynamoContentStore, "put_file_for_upload"),
        (MemosClient, "delete_knowledgebase_files"),
        (UploadStorage, "delete"),
    ),
]
# A team's delete, and its cleanup between any two of its writes (one membership and its counter each).
TEAM_TROUBLE = _crashes(
    (DynamoTeamStore, "delete_team"),
    (CleanupStateMachine, "start"),
    (DynamoTeamStore, "_delete_left_membership"),
)
CRASHABLE: list[Target] = list(
    dict.fromkeys(
        t[1]
        for t in (*INGEST_TROUBLE, *REPLACE_TROUBLE, *DELETE_TROUBLE, *CLEANUP_TROUBLE, *RECONCILE_TROUBLE, *TEAM_TROUBLE)
        if t is not None and t[0] == "crash"
    )
)


def trouble(options: list[Trouble]) -> st.SearchStrategy[Trouble]:
    """Nothing, about half of the time; else one of ``options``."""
    return st.one_of(st.none(), st.sampled_from(options))


@dataclass
class ModelKb:
    folders: dict[str, str | None] = field(default_factory=dict)  # folder id -> parent id
    files: dict[str, str | None] = field(default_factory=dict)  # file id -> folder id
    uploads: dict[str, str | None] = field(default_factory=dict)  # upload id -> folder id, not yet a file

    def under(self, folder_id: str) -> set[str]:
        """``folder_id`` and every folder below it."""
        found = {folder_id}
        while more := {f for f, parent in self.folders.items() if parent in found} - found:
            found |= more
        return found


def reset_world(service) -> None:
    """An empty table, bucket, queue and MemOS, so that every example starts from nothing."""
    table = service.stores.table
    for page in table.client.get_paginator("scan").paginate(
        TableName=table.name, ProjectionExpression="PK, SK"
    ):
        for item in page["Items"]:
            table.client.delete_item(TableName=table.name, Key=item)
    s3 = boto3.client("s3", region_name=REGION)
    keys = [{"Key": k} for k in bucket_keys(service)]
    if keys:
        s3.delete_objects(Bucket=service.refs["UploadBucket"], Delete={"Objects": keys, "Quiet": True})
    client = sqs_client()
    for queue in ("UploadQueue", "UploadDeadLetterQueue"):
        while messages := client.receive_message(QueueUrl=service.refs[queue], MaxNumberOfMessages=10).get(
            "Messages", []
        ):
            for message in messages:
                client.delete_message(QueueUrl=service.refs[queue], ReceiptHandle=message["ReceiptHandle"])
    service.memos.emulator.reset()


def test_interleaved_uploads_deletes_faults_crashes_and_reconciles_follow_the_model(service, monkeypatch):
    # The model checks each word with a recall as the owner, many at once: the per-user recall limit (its
    # own tests: test_recall_limit_api.py) is out of reach here, or its clock would decide the checks.
    monkeypatch.setenv("RECALL_BURST", "1000000")
    reset_composition()
    killer = Killer()
    killer.install(monkeypatch, CRASHABLE)

    class Deletions(RuleBasedStateMachine):
        """Model: which KBs, folders and files are live (ids in creation order, so that the same choices
        pick the same things in every run), which were deleted, and which uploads may still become
        files. Lists are exact for KBs and folders; for files, an upload becomes a file when it first
        shows up in a listing (its outcome may wait for a retry or a reconcile), and then must stay."""

        def __init__(self) -> None:
            super().__init__()
            killer.disarm()
            reset_world(service)
            self.executions, self.schedule = Executions(service), Schedule(service)
            self.kbs: dict[str, ModelKb] = {}
            self.gone_kbs: set[str] = set()
            self.gone_folders: dict[str, str] = {}  # folder id -> its KB
            self.gone_files: set[str] = set()
            self.dead_uploads: set[str] = set()  # uploads into something deleted: never a file
            self.tokens: dict[str, str] = {}  # upload id -> the word only its file contains
            self.teams: dict[str, set[str]] = {}  # live team id -> the KBs it shares
            self.gone_teams: list[str] = []
            self.run = uuid.uuid4().hex[:6]

        def expect(self, what: Trouble) -> None:
            if what is None:
                return
            kind, target, how = what
            if kind == "fault":
                service.memos.add_fault(target, code=50004, times=how)
            else:
                killer.arm(target, how)

        def upload_into(self, kb_id: str, folder: str | None) -> None:
            token = f"tok{self.run}n{len(self.tokens)}"
            upload_id = upload_bytes(service, kb_id, f"{token}.md", md(token), folder)
            self.kbs[kb_id].uploads[upload_id] = folder
            self.tokens[upload_id] = token

        # -- rules ----------------------------------------------------------------------------------

        # Given two KBs with a folder and files, every adapter call of the flows able to crash (the killer)
        @initialize(nested=st.booleans())
        def two_kbs_with_files(self, nested):
            """Two KBs, a folder (maybe with a subfolder) and three files, so that every step has material."""
            for user in ("alice", "bob", "carol"):
                register(service, user, user.title())
            first, second = (create_kb(service, name=name) for name in ("kb0", "kb1"))
            self.kbs = {first: ModelKb(), second: ModelKb()}
            top = new_folder(service, first, "top")
            self.kbs[first].folders[top] = None
            where = top
            if nested:
                where = new_folder(service, first, "sub", top)
                self.kbs[first].folders[where] = top
            for kb_id, folder in ((first, None), (first, where), (second, None)):
                self.upload_into(kb_id, folder)
            deliver(service, batch=10)

        # When creates, uploads, replaces, deletes, cleanups and reconciles interleave, any of them meeting a
        # MemOS fault or a crash (the model follows what must have happened)
        @precondition(lambda self: len(self.kbs) < 3)
        @rule()
        def create_kb(self):
            self.kbs[create_kb(service, name=f"kb{len(self.kbs)}")] = ModelKb()

        @precondition(lambda self: self.kbs)
        @rule(data=st.data())
        def create_folder(self, data):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            kb = self.kbs[kb_id]
            parent = data.draw(st.sampled_from([None, *kb.folders]), label="parent")
            kb.folders[new_folder(service, kb_id, f"d{len(kb.folders)}", parent)] = parent

        @precondition(lambda self: self.kbs)
        @rule(data=st.data(), what=trouble(INGEST_TROUBLE))
        def upload(self, data, what):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            folder = data.draw(st.sampled_from([None, *self.kbs[kb_id].folders]), label="folder")
            self.upload_into(kb_id, folder)
            self.expect(what)
            deliver(service, until_empty=False)

        @precondition(lambda self: any(kb.files for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(REPLACE_TROUBLE))
        def replace_file(self, data, what):
            """A file's next version, with a word of its own; refused while another replace of it is in flight."""
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.files]), label="kb")
            file_id = data.draw(st.sampled_from(list(self.kbs[kb_id].files)), label="file")
            token = f"tok{self.run}n{len(self.tokens)}"
            content = md(token)
            path = f"/knowledge-bases/{kb_id}/files/{file_id}/replacements"
            reply = service.call("POST", path, "alice", body={"size_bytes": len(content)})
            if reply.status == HTTPStatus.CONFLICT:
                assert reply.body["error"]["code"] == "replace_in_progress", reply.body
                return
            assert reply.status == HTTPStatus.CREATED, reply.body
            assert post_file(reply.body, content, "next.md").status_code == HTTPStatus.NO_CONTENT
            self.tokens[reply.body["upload_id"]] = token
            self.expect(what)
            deliver(service, until_empty=False)

        @precondition(lambda self: any(kb.files for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_file(self, data, what):
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.files]), label="kb")
            file_id = data.draw(st.sampled_from(list(self.kbs[kb_id].files)), label="file")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}/files/{file_id}")
            del self.kbs[kb_id].files[file_id]
            self.gone_files.add(file_id)

        @precondition(lambda self: any(kb.folders for kb in self.kbs.values()))
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_folder(self, data, what):
            kb_id = data.draw(st.sampled_from([k for k, kb in self.kbs.items() if kb.folders]), label="kb")
            kb = self.kbs[kb_id]
            folder_id = data.draw(st.sampled_from(list(kb.folders)), label="folder")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}/folders/{folder_id}")
            subtree = kb.under(folder_id)
            for gone in subtree:
                del kb.folders[gone]
                self.gone_folders[gone] = kb_id
            for file_id in [i for i, parent in kb.files.items() if parent in subtree]:
                del kb.files[file_id]
                self.gone_files.add(file_id)
            for upload_id in [i for i, parent in kb.uploads.items() if parent in subtree]:
                del kb.uploads[upload_id]
                self.dead_uploads.add(upload_id)
            self.gone_are_gone()

        @precondition(lambda self: self.kbs)
        @rule(data=st.data(), what=trouble(DELETE_TROUBLE))
        def delete_kb(self, data, what):
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            self.expect(what)
            delete(service, f"/knowledge-bases/{kb_id}")
            kb = self.kbs.pop(kb_id)
            self.gone_kbs.add(kb_id)
            for shared in self.teams.values():
                shared.discard(kb_id)
            self.gone_files |= set(kb.files)
            self.dead_uploads |= set(kb.uploads)
            self.gone_folders.update(dict.fromkeys(kb.folders, kb_id))
            self.gone_are_gone()

        @precondition(lambda self: self.kbs and len(self.teams) + len(self.gone_teams) < 3)
        @rule(data=st.data())
        def team_shares_a_kb(self, data):
            """A team of alice's, bob a member and carol invited, with one of her KBs shared with it."""
            team_id = create_team(service, name=f"t{len(self.teams) + len(self.gone_teams)}")
            join(service, team_id, "bob")
            assert invite(service, team_id, "carol").status == HTTPStatus.CREATED
            kb_id = data.draw(st.sampled_from(list(self.kbs)), label="kb")
            reply = share_with_team(service, kb_id, team_id)
            assert reply.status == HTTPStatus.CREATED, reply.body
            self.teams[team_id] = {kb_id}

        @precondition(lambda self: self.teams)
        @rule(data=st.data(), what=trouble(TEAM_TROUBLE))
        def delete_team(self, data, what):
            team_id = data.draw(st.sampled_from(list(self.teams)), label="team")
            self.expect(what)
            delete(service, f"/teams/{team_id}", HTTPStatus.NO_CONTENT)
            del self.teams[team_id]
            self.gone_teams.append(team_id)

        @rule(what=trouble(CLEANUP_TROUBLE))
        def cleanups_run(self, what):
            self.expect(what)
            self.executions.run_started()

        @rule(what=trouble(RECONCILE_TROUBLE))
        def reconcile_runs(self, what):
            self.expect(what)
            self.schedule.reconcile()
            deliver(service, until_empty=False)  # what it handed back to the ingest

        @rule()
        def memos_recovers(self):
            service.memos.clear_faults()

        # -- what must hold after every step ----------------------------------------------------------

        # Then, after every step, nothing deleted is visible and nothing live is lost
        def listing(self, kb_id: str, folder_id: str | None) -> Any:
            query = {"folder_id": folder_id} if folder_id else None
            return service.call("GET", f"/knowledge-bases/{kb_id}/files", "alice", query=query)

        def gone_are_gone(self) -> None:
            for kb_id in self.gone_kbs:
                assert (
                    service.call("GET", f"/knowledge-bases/{kb_id}", "alice").status == HTTPStatus.NOT_FOUND
                )
                assert self.listing(kb_id, None).status == HTTPStatus.NOT_FOUND
            for folder_id, kb_id in self.gone_folders.items():
                if kb_id in self.kbs:
                    assert self.listing(kb_id, folder_id).status == HTTPStatus.NOT_FOUND

        @invariant()
        def a_member_reads_what_the_live_teams_share(self):
            shared = {kb_id for kbs in self.teams.values() for kb_id in kbs if kb_id in self.kbs}
            assert reads(service, "bob") == (shared, len(shared))
            assert min(counter(service, "alice"), counter(service, "bob")) >= len(self.teams)

        @invariant()
        def nothing_deleted_is_visible_and_nothing_live_is_lost(self):
            assert kb_ids_listed(service) == set(self.kbs)
            recall = service.call("POST", "/recall", "alice", body={"query": "内容"})
            assert recall.status == HTTPStatus.OK, recall.body
            assert recall.body["scope_size"] == len(self.kbs)
            # (a deleted KB or folder that came back would be in these lists: the parent's listing has
            # exactly the live subfolders; ``gone_are_gone`` checks them by id after each delete and at the end)
            for kb_id, kb in self.kbs.items():
                for level in [None, *kb.folders]:
                    reply = self.listing(kb_id, level)
                    assert reply.status == HTTPStatus.OK, reply.body
                    assert {f["id"] for f in reply.body["folders"]} == {
                        f for f, p in kb.folders.items() if p == level
                    }
                    listed = {e["id"]: e for e in reply.body["files"] if e["id"].startswith("fi_")}
                    for file_id, entry in listed.items():
                        assert file_id not in self.gone_files, f"deleted file {file_id} is listed"
                        assert entry["reason"] != GONE_FROM_MEMOS, (
                            f"live file {file_id} is missing from MemOS"
                        )
                        if file_id not in kb.files:  # an upload became a file: adopt it
                            assert entry["upload_id"] in kb.uploads, f"unexpected file {entry}"
                            assert kb.uploads.pop(entry["upload_id"]) == level
                            kb.files[file_id] = level
                    assert {f for f, p in kb.files.items() if p == level} <= set(listed), (
                        "a live file vanished"
                    )

        def teardown(self):
            # Then, once AWS has settled, the stores agree, no upload became two files, and recall finds
            # every live file's words and none of the rest
            killer.disarm()
            settle(service, self.executions, self.schedule)
            assert_consistent(service)
            self.nothing_deleted_is_visible_and_nothing_live_is_lost()
            # nothing of a deleted team is left, each teams counter is exact, each team lists its KBs
            self.a_member_reads_what_the_live_teams_share()
            assert [left for team_id in self.gone_teams for left in team_residue(service, team_id)] == []
            assert (counter(service, "alice"), counter(service, "bob"), counter(service, "carol")) == (len(self.teams),) * 2 + (0,)
            store = DynamoTeamStore(service.stores.table)
            assert {t: set(store.get_team(t).kbs) for t in self.teams} == {  # type: ignore[union-attr]
                t: {k for k in kbs if k in self.kbs} for t, kbs in self.teams.items()
            }
            self.gone_are_gone()
            # no upload became two files, nor a file of something deleted
            made = [i["upload_id"] for i in table_items(service) if i["SK"].startswith("FILE#")]
            assert len(made) == len(set(made)), f"an upload became two files: {made}"
            assert not set(made) & self.dead_uploads
            # and every live file answers with the words of its recorded version only: none of a deleted or
            # never recorded file, none of a replaced version or of a replace that failed
            if self.kbs:
                live = [token for upload_id, token in self.tokens.items() if upload_id in made]
                dead = [token for upload_id, token in self.tokens.items() if upload_id not in made]
                problems = recall_problems(service, present=live, absent=dead)
                assert not problems, "\n  ".join(problems)

    run_state_machine_as_test(
        Deletions,
        settings=settings(
            max_examples=15,
            stateful_step_count=10,
            deadline=None,
            derandomize=True,  # fixed examples keep CI time predictable
            # At most ten steps: a failing sequence is short enough to read as found, and shrinking one
            # through moto and the emulator takes minutes.
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
        ),
    )
