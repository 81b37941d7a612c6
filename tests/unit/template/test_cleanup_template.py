"""The deletion half of template.yaml: the cleanup state machine (its ASL linted as CloudFormation would see
it), its least-privilege role, the delete and reconcile functions and the reconciler's schedule.

How the ASL behaves (retries, catch, the loop) is tested by running it in moto's interpreter
(tests/integration/local/test_local_stepfunctions.py); here is what must hold of the definition itself.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from cfnlint.api import lint

from memmy_local.template import TEMPLATE_PATH, load_template
from tests.support.sam import LINT_CONFIG, REPO_ROOT, translate

ASL_PATH = REPO_ROOT / "infra/statemachines/cleanup.asl.json"
TRANSIENT = {
    "CleanupRetryable",
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


@pytest.fixture(scope="module")
def sam_template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


@pytest.fixture(scope="module")
def asl() -> dict[str, Any]:
    return json.loads(ASL_PATH.read_text(encoding="utf-8"))


def lint_findings(sam_template: dict[str, Any], definition: dict[str, Any]) -> list[tuple[str, str]]:
    """cfn-lint's findings on the translated template with ``definition`` as the state machine's
    ``Definition``: offline, a ``DefinitionUri`` is only an opaque S3 location, so the ASL is put where
    CloudFormation (and cfn-lint's schema for it, rule E3601) would see it after packaging."""
    cloudformation = translate(sam_template)
    properties = cloudformation["Resources"]["CleanupStateMachine"]["Properties"]
    for key in ("DefinitionS3Location", "DefinitionString"):
        properties.pop(key, None)
    properties["Definition"] = definition
    matches = lint(json.dumps(cloudformation), config=LINT_CONFIG)
    return [(m.rule.id, "/".join(map(str, m.path))) for m in matches]


def test_the_state_machine_refers_to_its_asl_file_which_lints_clean(sam_template, asl):
    properties = sam_template["Resources"]["CleanupStateMachine"]["Properties"]
    assert (properties["Type"], properties["DefinitionUri"]) == ("STANDARD", "infra/statemachines/cleanup.asl.json")
    assert set(properties["DefinitionSubstitutions"]) == {"CleanupFunctionArn", "TableName"}

    assert lint_findings(sam_template, asl) == []


def test_the_linter_does_catch_a_broken_definition(sam_template, asl):
    broken = copy.deepcopy(asl)
    del broken["States"]["CleanUp"]["Retry"][0]["ErrorEquals"]

    assert ("E3601", "Resources/CleanupStateMachine/Properties/Definition/States/CleanUp/Retry/0") in lint_findings(
        sam_template, broken
    )


def test_every_transition_names_a_state_of_the_machine(asl):
    # cfn-lint's schema does not follow transitions: a Next to nowhere would only fail at deploy time.
    states = asl["States"]
    targets = {asl["StartAt"]}
    for state in states.values():
        targets |= {state[k] for k in ("Next", "Default") if k in state}
        targets |= {c["Next"] for c in state.get("Choices", []) + state.get("Catch", [])}
    assert targets <= set(states)
    assert all("Next" in s or s.get("End") or s["Type"] in ("Choice", "Fail", "Succeed") for s in states.values())


def test_only_transient_errors_are_retried_with_capped_jittered_backoff(asl):
    (retry,) = asl["States"]["CleanUp"]["Retry"]
    assert set(retry["ErrorEquals"]) == TRANSIENT  # never States.ALL: a permanent error fails fast
    assert retry["JitterStrategy"] == "FULL"
    assert retry["BackoffRate"] > 1
    assert 1 <= retry["MaxAttempts"] <= 10
    assert retry["IntervalSeconds"] <= retry["MaxDelaySeconds"] <= 900


def test_failure_marks_the_outbox_item_failed_and_success_deletes_it(asl):
    states = asl["States"]
    (catch,) = states["CleanUp"]["Catch"]
    assert (catch["ErrorEquals"], catch["Next"]) == (["States.ALL"], "MarkFailed")
    mark = states["MarkFailed"]
    assert mark["Resource"] == "arn:aws:states:::dynamodb:updateItem"
    assert mark["Parameters"]["ExpressionAttributeValues"][":queue"] == {"S": "CLEANUP#failed"}
    assert states[mark["Next"]]["Type"] == "Fail"
    choice = states["Finished?"]
    assert choice["Choices"][0]["Next"] == "DeleteOutbox"
    assert choice["Default"] == "CleanUp"
    assert states["DeleteOutbox"]["Resource"] == "arn:aws:states:::dynamodb:deleteItem"
    assert states["DeleteOutbox"]["Parameters"]["Key.$"] == "$.key"


def test_the_state_machine_may_only_invoke_the_cleanup_and_touch_the_table(sam_template):
    (policy,) = sam_template["Resources"]["CleanupStateMachine"]["Properties"]["Policies"]
    granted = {
        action: json.dumps(statement["Resource"])
        for statement in policy["Statement"]
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    }
    assert set(granted) == {"lambda:InvokeFunction", "dynamodb:UpdateItem", "dynamodb:DeleteItem"}
    assert "CleanupFunction" in granted["lambda:InvokeFunction"]
    assert "Table" in granted["dynamodb:DeleteItem"]


def test_delete_starts_the_cleanup_and_never_calls_memos(sam_template):
    delete = sam_template["Resources"]["DeleteFunction"]["Properties"]
    assert delete["Environment"]["Variables"]["CLEANUP_STATE_MACHINE_ARN"] == {"Ref": "CleanupStateMachine"}
    actions = {
        action
        for statement in delete["Policies"][0]["Statement"]
        for action in (statement["Action"] if isinstance(statement["Action"], list) else [statement["Action"]])
    }
    assert "states:StartExecution" in actions
    assert not any(a.startswith(("secretsmanager:", "s3:")) for a in actions)
    routes = {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in delete["Events"].values()}
    assert routes == {
        ("DELETE", "/knowledge-bases/{kb_id}"),
        ("DELETE", "/knowledge-bases/{kb_id}/files/{file_id}"),
        ("DELETE", "/knowledge-bases/{kb_id}/folders/{folder_id}"),
    }


def test_reconcile_runs_on_a_schedule_and_the_translation_creates_it(sam_template):
    (event,) = sam_template["Resources"]["ReconcileFunction"]["Properties"]["Events"].values()
    assert event["Type"] == "ScheduleV2"
    assert event["Properties"]["ScheduleExpression"].startswith("rate(")
    kinds = {r["Type"] for r in translate(sam_template)["Resources"].values()}
    assert {"AWS::Scheduler::Schedule", "AWS::StepFunctions::StateMachine"} <= kinds


@pytest.mark.parametrize("metric", ["CleanupStuck", "KbCreateOutcomeUnknown", "KbBackendUnknown"])
def test_the_reconcilers_warnings_are_alarmed(sam_template, metric):
    alarms = [
        r["Properties"]
        for r in sam_template["Resources"].values()
        if r["Type"] == "AWS::CloudWatch::Alarm" and r["Properties"].get("MetricName") == metric
    ]
    assert len(alarms) == 1
    assert alarms[0]["Namespace"] == "Memmy"
