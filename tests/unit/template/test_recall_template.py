"""The recall function in template.yaml: its own small settings, read-only table access, one route."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_local.template import http_routes, load_template

# The grants' Query, and the KBs' names with the sharers' profiles in one BatchGetItem (attribution).
READ_ONLY_DYNAMODB = {"dynamodb:Query", "dynamodb:BatchGetItem"}


@pytest.fixture(scope="module")
def recall_function() -> dict[str, Any]:
    return load_template()["Resources"]["RecallFunction"]["Properties"]


def statements(function: dict[str, Any]) -> list[dict[str, Any]]:
    return [s for policy in function["Policies"] for s in policy["Statement"]]


def actions(statement: dict[str, Any]) -> set[str]:
    action = statement["Action"]
    return set(action if isinstance(action, list) else [action])


def test_recall_has_its_own_small_memory_and_a_short_timeout(recall_function):
    assert recall_function["MemorySize"] <= 512
    assert recall_function["Timeout"] <= 6
    variables = recall_function["Environment"]["Variables"]
    # The MemOS budget leaves the function time for the two table reads and the answer.
    assert float(variables["RECALL_MEMOS_TIMEOUT_SECONDS"]) <= recall_function["Timeout"] / 2
    assert int(variables["RECALL_CONTEXT_MAX_CHARS"]) > 0
    assert variables["RECALL_ATTRIBUTION"] in {"by_file", "per_kb", "combined"}
    assert int(variables["RECALL_MAX_SEARCHES"]) >= 1
    assert int(variables["RECALL_MAX_PER_KB"]) >= 1


def test_recall_may_only_read_the_table_write_its_budget_and_counter_and_read_the_memos_key(recall_function):
    granted = [(actions(s), s["Resource"], s.get("Condition")) for s in statements(recall_function)]
    dynamodb = [(a, r, c) for a, r, c in granted if any(x.startswith("dynamodb:") for x in a)]
    # Queries on the table itself: never an index (GSIs are never used to authorize); two writes and no
    # other item (IAM checks the partition key written): the fleet's MemOS budget, its FLEET#<backend>
    # items (docs/memos.md, "Rate"), and the per-user recall counter.
    table = {"Fn::GetAtt": ["Table", "Arn"]}
    fleet_only = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["FLEET#*"]}}
    counter_only = {"ForAllValues:StringLike": {"dynamodb:LeadingKeys": ["LIMIT#recall#*"]}}
    assert dynamodb == [
        (READ_ONLY_DYNAMODB, table, None),
        ({"dynamodb:GetItem", "dynamodb:PutItem"}, table, fleet_only),
        ({"dynamodb:UpdateItem"}, table, counter_only),
    ]
    granted = [(a, r) for a, r, _ in granted]
    others = [(a, r) for a, r in granted if not any(x.startswith("dynamodb:") for x in a)]
    assert others == [({"secretsmanager:GetSecretValue"}, {"Ref": "MemosApiKeySecret"})]


def test_the_per_user_recall_limit_comes_from_the_stacks_parameters(recall_function):
    variables = recall_function["Environment"]["Variables"]
    parameters = resources_parameters()
    wired = {
        "RECALL_BURST": "RecallBurst",
        "RECALL_RATE_PER_SECOND": "RecallRatePerSecond",
        "RECALL_LIMIT_WINDOW_SECONDS": "RecallLimitWindowSeconds",
    }
    for variable, parameter in wired.items():
        assert variables[variable] == {"Ref": parameter}
        assert parameters[parameter]["Type"] == "Number"
        assert parameters[parameter]["MinValue"] > 0
    # The defaults docs/limits.md explains: a burst of 10, then 2 a second, counted in 10 s windows.
    assert [parameters[p]["Default"] for p in wired.values()] == [10, 2, 10]


def test_recall_serves_exactly_post_recall_and_logs_to_its_own_group(recall_function):
    routes = [(r.method, r.path) for r in http_routes(load_template()) if r.function == "RecallFunction"]
    assert routes == [("POST", "/recall")]
    assert recall_function["LoggingConfig"]["LogGroup"] == {"Ref": "RecallLogGroup"}


# ------------------------------------------------------------------------------------------ SnapStart
# Functions on SnapStart (docs/architecture.md, "SnapStart"; docs/benchmarks.md says which and why).
SNAPSTART_FUNCTIONS = {"RecallFunction"}


def resources_parameters() -> dict[str, Any]:
    parameters: dict[str, Any] = load_template()["Parameters"]
    return parameters


def test_recall_runs_on_snapstart_from_a_published_version_behind_its_alias():
    resources = load_template()["Resources"]
    on_snapstart = {
        name
        for name, resource in resources.items()
        if resource["Type"] == "AWS::Serverless::Function" and "SnapStart" in resource["Properties"]
    }
    assert on_snapstart == SNAPSTART_FUNCTIONS
    for name in on_snapstart:
        properties = resources[name]["Properties"]
        # On by default; the parameter turns it off (docs/benchmarks.md says when)
        assert properties["SnapStart"] == {"ApplyOn": {"Ref": "RecallSnapStart"}}
        parameter = resources_parameters()["RecallSnapStart"]
        assert parameter["Default"] == "PublishedVersions"
        assert set(parameter["AllowedValues"]) == {"PublishedVersions", "None"}
        # SnapStart snapshots published versions only: SAM publishes one per change and moves the alias.
        assert properties["AutoPublishAlias"] == "live"
        # SnapStart and provisioned concurrency exclude each other.
        assert "ProvisionedConcurrencyConfig" not in properties


def test_snapstart_functions_use_a_runtime_and_architecture_snapstart_supports():
    template = load_template()
    function = template["Globals"]["Function"]
    for name in SNAPSTART_FUNCTIONS:
        properties = {**function, **template["Resources"][name]["Properties"]}
        # Python 3.12 and later; both architectures (arm64 since 2024), so the functions stay on arm64.
        major, minor = (int(part) for part in properties["Runtime"].removeprefix("python").split("."))
        assert (major, minor) >= (3, 12)
        assert properties["Architectures"] == ["arm64"]
        assert properties.get("EphemeralStorage", {}).get("Size", 512) <= 512


def test_the_http_api_invokes_the_recall_alias_not_the_unpublished_function():
    from tests.support.sam import translate

    cloudformation = translate(load_template())
    resources = cloudformation["Resources"]
    alias = resources["RecallFunctionAliaslive"]
    assert alias["Type"] == "AWS::Lambda::Alias"
    version = alias["Properties"]["FunctionVersion"]["Fn::GetAtt"][0]
    assert resources[version]["Type"] == "AWS::Lambda::Version"
    integration = cloudformation["Resources"]["HttpApi"]["Properties"]["Body"]["paths"]["/recall"]["post"]
    uri = integration["x-amazon-apigateway-integration"]["uri"]["Fn::Sub"]
    assert "${RecallFunctionAliaslive}" in uri
    permission = resources["RecallFunctionRecallPermission"]["Properties"]
    assert permission["FunctionName"] == {"Ref": "RecallFunctionAliaslive"}


def _recall_version(core_layer_location: str) -> str:
    """The logical id of the recall version SAM publishes with the core layer at ``core_layer_location``."""
    from tests.support.sam import translate

    template = load_template()
    template["Resources"]["CoreLayer"]["Properties"]["ContentUri"] = core_layer_location
    resources = translate(template)["Resources"]
    (version,) = (name for name, r in resources.items() if r["Type"] == "AWS::Lambda::Version")
    return version


def test_a_change_of_the_core_layer_alone_publishes_a_new_recall_version():
    # Recall's rules live in the core layer (memmy_kb), not in functions/recall/: a deploy that changes
    # only the layer must move the alias (and the snapshot) to a version running the new layer
    before = _recall_version("build/core-layer-before/")
    after = _recall_version("build/core-layer-after/")

    assert before != after


def test_sustained_degradation_by_the_rate_governor_raises_an_alarm():
    template = load_template()
    variables = template["Resources"]["RecallFunction"]["Properties"]["Environment"]["Variables"]
    assert variables["RECALL_RATE_GOVERNOR"] == "on"
    assert variables["RECALL_FLEET_BUDGET"] == "on"  # max_qps for the fleet, not per environment
    alarm = template["Resources"]["RecallDegradedAlarm"]["Properties"]
    metrics = {m["Id"]: m for m in alarm["Metrics"]}
    assert metrics["degraded"]["MetricStat"]["Metric"]["MetricName"] == "RecallDegraded"
    assert metrics["recalls"]["MetricStat"]["Metric"]["Dimensions"] == [
        {"Name": "FunctionName", "Value": {"Ref": "RecallFunction"}}
    ]
    # Sustained: every one of several periods over the threshold, not one burst.
    assert alarm["EvaluationPeriods"] == alarm["DatapointsToAlarm"] >= 3
