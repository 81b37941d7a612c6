"""template.yaml: translates offline with the SAM translator, lints clean, and keeps the service's rules.

cfn-lint 1.x does not translate SAM itself (on a raw SAM template it misses broken functions), so the template is translated with
``samtranslator`` first and the resulting CloudFormation is linted.
"""

from __future__ import annotations

import ast
import copy
import json
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cfnlint.api import lint

from memmy_local.template import TEMPLATE_PATH, load_template
from memmy_local.template_intrinsics import referenced_logical_ids
from tests.support.mcp_auth_events import AUTHORIZATION_SERVER_ROUTES
from tests.support.sam import LINT_CONFIG, REPO_ROOT, resources_of, translate

AUTHORIZER = "MemmyJwt"


@pytest.fixture(scope="module")
def sam_template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)


@pytest.fixture(scope="module")
def cloudformation(sam_template: dict[str, Any]) -> dict[str, Any]:
    return translate(sam_template)


@pytest.fixture(scope="module")
def lint_findings(cloudformation: dict[str, Any]) -> list[str]:
    matches = lint(json.dumps(cloudformation), config=LINT_CONFIG)
    return [f"{m.rule.id} {'/'.join(map(str, m.path))}: {m.message}" for m in matches]


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return resources_of(template, "AWS::Serverless::Function")


def http_api_events(template: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, function in functions(template).items():
        for event_name, event in function["Properties"].get("Events", {}).items():
            if event["Type"] == "HttpApi":
                yield name, event_name, event["Properties"]


# ------------------------------------------------------------------------------ translation and lint


def test_the_translated_template_lints_clean(lint_findings: list[str]) -> None:
    # Errors, warnings and (non-experimental) informational findings alike.
    assert lint_findings == []


def test_the_linter_does_catch_a_broken_template(sam_template: dict[str, Any]) -> None:
    # Given the template with a timeout Lambda does not allow, an unknown runtime and an undefined Ref
    broken = copy.deepcopy(sam_template)
    broken["Globals"]["Function"]["Timeout"] = 1000
    broken["Globals"]["Function"]["Runtime"] = "python2.1"
    broken["Globals"]["Function"]["Environment"]["Variables"]["BROKEN"] = {"Ref": "NoSuchResource"}

    # When it is translated and linted like the real one
    matches = lint(json.dumps(translate(broken)), config=LINT_CONFIG)

    # Then each is an error: a clean result above is not a silent no-op
    flagged = {tuple(map(str, m.path[1:4])) for m in matches if m.rule.id.startswith("E")}
    assert {
        ("CreateKbFunction", "Properties", "Timeout"),
        ("CreateKbFunction", "Properties", "Runtime"),
        ("CreateKbFunction", "Properties", "Environment"),
    } <= flagged


def test_the_translation_yields_the_expected_cloudformation(cloudformation: dict[str, Any]) -> None:
    kinds = {r["Type"] for r in cloudformation["Resources"].values()}
    assert {
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::Lambda::Function",
        "AWS::Lambda::LayerVersion",
        "AWS::DynamoDB::Table",
        "AWS::SecretsManager::Secret",
    } <= kinds
    assert set(cloudformation["Outputs"]) >= {"ApiUrl", "TableName", "SecretArn"}


# ---------------------------------------------------------------------------------------- code paths


@pytest.mark.parametrize("function", ["CreateKbFunction", "ManageKbFunction"])
def test_each_function_code_uri_holds_an_app_with_a_lambda_handler(
    sam_template: dict[str, Any], function: str
) -> None:
    properties = functions(sam_template)[function]["Properties"]
    module_name, _, handler_name = properties["Handler"].rpartition(".")
    app = REPO_ROOT / properties["CodeUri"] / f"{module_name}.py"
    assert app.is_file(), f"{app} is missing"

    # Parsed, not imported: importing would run the handler module's top level.
    tree = ast.parse(app.read_text(encoding="utf-8"), filename=str(app))
    top_level_names = {node.name for node in tree.body if isinstance(node, ast.FunctionDef)} | {
        target.id
        for node in tree.body
        if isinstance(node, ast.Assign)
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    assert handler_name in top_level_names


def test_the_layer_builds_memmy_kb_with_the_pinned_runtime(sam_template: dict[str, Any]) -> None:
    layer = sam_template["Resources"]["CoreLayer"]
    content = REPO_ROOT / layer["Properties"]["ContentUri"]
    # BuildMethod makefile: `sam build` runs `make build-CoreLayer` with the Makefile in ContentUri
    # (tests/unit/repository/test_layer_build.py runs it). memmy_kb and the pins sit beside it.
    assert layer["Metadata"]["BuildMethod"] == "makefile"
    assert "\nbuild-CoreLayer:" in (content / "Makefile").read_text(encoding="utf-8")
    assert (content / "memmy_kb" / "__init__.py").is_file()

    requirements = {
        line.strip()
        for line in (content / "requirements.txt").read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    }
    # The layer runs what the tests run: the project's runtime pins, less boto3 (the Lambda runtime's),
    # and their own dependencies, pinned too.
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    runtime = {d for d in project["project"]["dependencies"] if not d.startswith("boto3")}
    assert runtime <= requirements


# ----------------------------------------------------------------------------------------- data


def test_the_table_is_on_demand_with_pitr_sse_ttl_and_both_indexes(sam_template: dict[str, Any]) -> None:
    table = sam_template["Resources"]["Table"]
    properties = table["Properties"]

    assert table["DeletionPolicy"] == table["UpdateReplacePolicy"] == "Retain"
    assert properties["BillingMode"] == "PAY_PER_REQUEST"
    assert properties["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert properties["SSESpecification"]["SSEEnabled"] is True
    assert properties["TimeToLiveSpecification"] == {"AttributeName": "expires_at", "Enabled": True}
    assert properties["KeySchema"] == [
        {"AttributeName": "PK", "KeyType": "HASH"},
        {"AttributeName": "SK", "KeyType": "RANGE"},
    ]
    indexes = {index["IndexName"]: index for index in properties["GlobalSecondaryIndexes"]}
    assert set(indexes) == {"GSI1", "GSI2"}
    for name in indexes:
        assert indexes[name]["KeySchema"] == [
            {"AttributeName": f"{name}PK", "KeyType": "HASH"},
            {"AttributeName": f"{name}SK", "KeyType": "RANGE"},
        ]
    assert indexes["GSI1"]["Projection"] == {"ProjectionType": "ALL"}


def test_the_memos_key_never_appears_in_the_template(sam_template: dict[str, Any]) -> None:
    secret = sam_template["Resources"]["MemosApiKeySecret"]["Properties"]
    assert "SecretString" not in secret
    assert json.loads(secret["GenerateSecretString"]["SecretStringTemplate"]) == {"api_key": ""}
    assert '{"api_key"' in secret["Description"]


def test_functions_get_the_shared_environment(sam_template: dict[str, Any]) -> None:
    variables = sam_template["Globals"]["Function"]["Environment"]["Variables"]
    assert variables["TABLE_NAME"] == {"Ref": "Table"}
    assert variables["MEMOS_API_KEY_SECRET"] == {"Ref": "MemosApiKeySecret"}
    assert variables["MEMOS_BASE_URL"] == {"Ref": "MemosBaseUrl"}
    assert variables["POWERTOOLS_SERVICE_NAME"] == "memmy-kb"


# ------------------------------------------------------------------------------------ IAM and logs


def policy_statements(cloudformation: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for name, role in resources_of(cloudformation, "AWS::IAM::Role").items():
        for policy in role["Properties"].get("Policies", []):
            statements = policy["PolicyDocument"]["Statement"]
            for statement in statements if isinstance(statements, list) else [statements]:
                yield name, statement


def as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_no_statement_grants_every_resource_except_for_x_ray(cloudformation: dict[str, Any]) -> None:
    statements = list(policy_statements(cloudformation))
    assert statements, "the translated template has no inline policies to check"
    for role, statement in statements:
        actions = as_list(statement["Action"])
        assert not any(action == "*" or action.endswith(":*") for action in actions), (role, statement)
        if "*" in as_list(statement["Resource"]):
            assert all(action.startswith("xray:") for action in actions), (role, statement)


def test_privileges_follow_what_each_function_is_for(cloudformation: dict[str, Any]) -> None:
    # Exact needs are checked by recording each handler's AWS calls (tests/support/iam.py); these are
    # the promises of the design that must hold whatever the code does.
    granted: dict[str, set[str]] = {}
    recall_writes: list[dict[str, Any]] = []
    writes = {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem"}
    for role, statement in policy_statements(cloudformation):
        granted.setdefault(role, set()).update(as_list(statement["Action"]))
        if role == "RecallFunctionRole" and writes & set(as_list(statement["Action"])):
            recall_writes.append(statement)
    # Recall writes nothing but the fleet's MemOS budget items (FLEET#<backend>, with PutItem) and its
    # per-user counter (LIMIT#recall#<user>, with UpdateItem): test_recall_template.py.
    assert [set(as_list(s["Action"])) & writes for s in recall_writes] == [
        {"dynamodb:PutItem"},
        {"dynamodb:UpdateItem"},
    ]
    assert [s["Condition"]["ForAllValues:StringLike"]["dynamodb:LeadingKeys"] for s in recall_writes] == [
        ["FLEET#*"],
        ["LIMIT#recall#*"],
    ]
    assert "secretsmanager:GetSecretValue" not in granted["ShareFunctionRole"], "sharing never calls MemOS"
    assert "dynamodb:Scan" not in set().union(*granted.values()), "nothing scans the table"
    assert "dynamodb:Query" not in granted["CreateKbFunctionRole"]


def test_every_function_logs_to_its_own_log_group_with_retention(sam_template: dict[str, Any]) -> None:
    log_groups = resources_of(sam_template, "AWS::Logs::LogGroup")
    for name, function in functions(sam_template).items():
        properties = function["Properties"]
        group_id = properties["LoggingConfig"]["LogGroup"]["Ref"]
        group = log_groups[group_id]["Properties"]
        # Named as Lambda would name it, from the same string as the function's name.
        assert group["LogGroupName"] == {"Fn::Sub": "/aws/lambda/" + properties["FunctionName"]["Fn::Sub"]}, (
            name
        )
        assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}, name
    assert sam_template["Globals"]["Function"]["LoggingConfig"]["LogFormat"] == "JSON"


def test_access_logs_are_json_without_request_content(sam_template: dict[str, Any]) -> None:
    settings = sam_template["Resources"]["HttpApi"]["Properties"]["AccessLogSettings"]
    fields = json.loads(settings["Format"])
    assert "$context.routeKey" in fields.values()
    assert not any(re.search(r"body|querystring|header", value, re.IGNORECASE) for value in fields.values())
    group = sam_template["Resources"][settings["DestinationArn"]["Fn::GetAtt"][0]]
    assert group["Properties"]["RetentionInDays"] == {"Ref": "LogRetentionDays"}


# ---------------------------------------------------------------------------------------------- API


def test_the_jwt_authorizer_is_the_default(sam_template: dict[str, Any]) -> None:
    auth = sam_template["Resources"]["HttpApi"]["Properties"]["Auth"]
    assert auth["DefaultAuthorizer"] == AUTHORIZER
    authorizer = auth["Authorizers"][AUTHORIZER]
    assert authorizer["IdentitySource"] == "$request.header.Authorization"
    # The stack's own Cognito pool and its desktop app client (with the e2e client when there is one), or
    # the provider the parameters name (tests/unit/template/test_login_template.py resolves each branch).
    assert authorizer["JwtConfiguration"] == {
        "issuer": LOGIN_ISSUER,
        "audience": {
            "Fn::If": [
                "CreateE2eLoginClient",
                [{"Ref": "DesktopAppClient"}, {"Ref": "E2eLoginClient"}],
                [{"Fn::If": ["CreateUserPool", {"Ref": "DesktopAppClient"}, {"Ref": "JwtAudience"}]}],
            ]
        },
    }


LOGIN_ISSUER = {"Fn::If": ["CreateUserPool", {"Fn::Sub": "https://${UserPool.ProviderURL}"}, {"Ref": "JwtIssuer"}]}

# The route the desktop reads before it has a token (public login settings only), the remote MCP
# endpoint's, whose function checks its own tokens so that its 401 can name its metadata (RFC 9728), and
# its authorization server's, whose clients have no Memmy login token.
PUBLIC_ROUTES = {
    ("GET", "/login-configuration"),
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("DELETE", "/mcp"),
    ("GET", "/.well-known/oauth-protected-resource/mcp"),
    ("GET", "/.well-known/oauth-protected-resource"),
} | AUTHORIZATION_SERVER_ROUTES


def test_only_the_login_configuration_and_the_mcp_endpoint_opt_out_of_the_authorizer(sam_template: dict[str, Any]) -> None:
    events = list(http_api_events(sam_template))
    assert events
    opened = set()
    for function, event, properties in events:
        assert properties["ApiId"] == {"Ref": "HttpApi"}, (function, event)
        assert "proxy+" not in properties["Path"], (function, event)
        authorizer = properties.get("Auth", {}).get("Authorizer", AUTHORIZER)
        if authorizer == "NONE":
            opened.add((properties["Method"], properties["Path"]))
        else:
            assert authorizer == AUTHORIZER, (function, event)
    assert opened == PUBLIC_ROUTES


def test_every_translated_route_but_the_public_one_requires_the_jwt(cloudformation: dict[str, Any]) -> None:
    (api,) = resources_of(cloudformation, "AWS::ApiGatewayV2::Api").values()
    operations = [
        (path, method, operation)
        for path, methods in api["Properties"]["Body"]["paths"].items()
        for method, operation in methods.items()
    ]
    assert len(operations) == len(list(http_api_events(load_template(TEMPLATE_PATH))))
    for path, method, operation in operations:
        if (method.upper(), path) in PUBLIC_ROUTES:
            # SAM's built-in "NONE": API Gateway attaches no authorizer to this route.
            assert operation.get("security") == [{"NONE": []}], (method, path)
        else:
            assert operation.get("security") == [{AUTHORIZER: []}], (method, path)


def test_the_login_configuration_comes_from_the_parameters(sam_template: dict[str, Any]) -> None:
    manage_kb = functions(sam_template)["ManageKbFunction"]["Properties"]
    # The authorizer's issuer and audience, so the desktop asks for the tokens the API accepts.
    auth = sam_template["Resources"]["HttpApi"]["Properties"]["Auth"]["Authorizers"][AUTHORIZER]
    variables = manage_kb["Environment"]["Variables"]
    assert variables["LOGIN_ISSUER"] == auth["JwtConfiguration"]["issuer"] == LOGIN_ISSUER
    # (without the e2e client; with it, the desktop's client comes first: test_login_template.py)
    assert [variables["LOGIN_AUDIENCE"]] == auth["JwtConfiguration"]["audience"]["Fn::If"][2]
    assert variables == {
        "LOGIN_ISSUER": LOGIN_ISSUER,
        "LOGIN_AUDIENCE": {"Fn::If": ["CreateUserPool", {"Ref": "DesktopAppClient"}, {"Ref": "JwtAudience"}]},
        "LOGIN_CLIENT_ID": {"Fn::If": ["CreateUserPool", {"Ref": "DesktopAppClient"}, {"Ref": "DesktopClientId"}]},
        "LOGIN_SCOPES": {"Fn::If": ["CreateUserPool", "openid email phone profile", {"Ref": "LoginScopes"}]},
        "LOGIN_BEARER_TOKEN": {"Fn::If": ["CreateUserPool", "id_token", {"Ref": "LoginBearerToken"}]},
    }
    assert manage_kb["Events"]["GetLoginConfiguration"]["Properties"]["Auth"] == {"Authorizer": "NONE"}


def test_the_parameters_have_sane_defaults(sam_template: dict[str, Any]) -> None:
    parameters = sam_template["Parameters"]
    assert parameters["MemosBaseUrl"]["Default"] == "https://memos.memtensor.cn/api/openmem/v1"
    retention = parameters["LogRetentionDays"]
    assert retention["Type"] == "Number"
    assert retention["Default"] in retention["AllowedValues"]
    # A fresh deploy logs in with its own Cognito pool: no other provider is needed.
    assert parameters["JwtIssuer"]["Default"] == parameters["JwtAudience"]["Default"] == ""
    assert re.fullmatch(parameters["JwtIssuer"]["AllowedPattern"], "https://login.example.com/realm")
    assert not re.fullmatch(parameters["JwtIssuer"]["AllowedPattern"], "http://login.example.com")
    assert parameters["LoginBearerToken"]["Default"] == "access_token"
    assert parameters["LoginBearerToken"]["AllowedValues"] == ["access_token", "id_token"]
    assert parameters["DesktopClientId"]["Default"] == "memmy-desktop"
    assert parameters["LoginScopes"]["Default"].split() == ["openid", "profile", "email", "phone", "offline_access"]
    assert re.fullmatch(parameters["LoginScopes"]["AllowedPattern"], parameters["LoginScopes"]["Default"])
    assert not re.fullmatch(parameters["LoginScopes"]["AllowedPattern"], "openid  profile")


def test_template_path_is_the_repository_root() -> None:
    repository_root = Path(__file__).resolve().parents[3]
    assert repository_root / "template.yaml" == TEMPLATE_PATH


# ------------------------------------------------------------------------------------------ uploads


def statements_of(sam_template: dict[str, Any], function: str) -> list[dict[str, Any]]:
    return [
        statement
        for policy in functions(sam_template)[function]["Properties"]["Policies"]
        for statement in policy["Statement"]
    ]


def test_the_upload_bucket_is_private_encrypted_and_expires_its_objects(sam_template: dict[str, Any]) -> None:
    bucket = sam_template["Resources"]["UploadBucket"]["Properties"]
    assert set(bucket["PublicAccessBlockConfiguration"].values()) == {True}
    assert len(bucket["PublicAccessBlockConfiguration"]) == 4
    assert bucket["OwnershipControls"] == {"Rules": [{"ObjectOwnership": "BucketOwnerEnforced"}]}
    (encryption,) = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    (cors,) = bucket["CorsConfiguration"]["CorsRules"]
    assert cors["AllowedMethods"] == ["POST"]
    rules = {rule["Prefix"]: rule for rule in bucket["LifecycleConfiguration"]["Rules"]}
    assert set(rules) == {"uploads/", "verified/"}
    for rule in rules.values():
        assert rule["Status"] == "Enabled"
        assert 1 <= rule["ExpirationInDays"] <= 7
        assert rule["AbortIncompleteMultipartUpload"]["DaysAfterInitiation"] >= 1
    policy = sam_template["Resources"]["UploadBucketPolicy"]["Properties"]["PolicyDocument"]
    (tls,) = policy["Statement"]
    assert (tls["Effect"], tls["Condition"]) == ("Deny", {"Bool": {"aws:SecureTransport": "false"}})


def test_uploads_notify_the_queue_that_only_this_bucket_may_send_to(sam_template: dict[str, Any]) -> None:
    resources = sam_template["Resources"]
    bucket = resources["UploadBucket"]
    (notification,) = bucket["Properties"]["NotificationConfiguration"]["QueueConfigurations"]
    assert notification["Event"] == "s3:ObjectCreated:*"
    assert notification["Queue"] == {"Fn::GetAtt": ["UploadQueue", "Arn"]}
    assert notification["Filter"]["S3Key"]["Rules"] == [{"Name": "prefix", "Value": "uploads/"}]
    # S3 checks the queue policy when the notification is set: the bucket must come after it, and the
    # policy must name the bucket by a built string (a Ref would close a dependency cycle).
    assert bucket["DependsOn"] == "UploadQueuePolicy"
    policy = resources["UploadQueuePolicy"]["Properties"]
    assert "UploadBucket" not in referenced_logical_ids(policy)
    (statement,) = policy["PolicyDocument"]["Statement"]
    assert statement["Principal"] == {"Service": "s3.amazonaws.com"}
    assert statement["Action"] == "sqs:SendMessage"
    bucket_name = bucket["Properties"]["BucketName"]["Fn::Sub"]
    assert statement["Condition"]["ArnEquals"]["aws:SourceArn"] == {
        "Fn::Sub": f"arn:${{AWS::Partition}}:s3:::{bucket_name}"
    }
    assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}


def test_the_queue_retries_into_an_alarmed_dead_letter_queue(sam_template: dict[str, Any]) -> None:
    resources = sam_template["Resources"]
    queue = resources["UploadQueue"]["Properties"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["UploadDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    ingest_timeout = functions(sam_template)["IngestFunction"]["Properties"]["Timeout"]
    assert queue["VisibilityTimeout"] >= 6 * ingest_timeout
    assert queue["SqsManagedSseEnabled"] is True
    assert resources["UploadDeadLetterQueue"]["Properties"]["SqsManagedSseEnabled"] is True
    alarm = resources["UploadDeadLetterAlarm"]["Properties"]
    assert (alarm["Namespace"], alarm["MetricName"]) == ("AWS/SQS", "ApproximateNumberOfMessagesVisible")
    assert alarm["Dimensions"] == [
        {"Name": "QueueName", "Value": {"Fn::GetAtt": ["UploadDeadLetterQueue", "QueueName"]}}
    ]
    assert (alarm["ComparisonOperator"], alarm["Threshold"]) == ("GreaterThanThreshold", 0)


def test_the_ingest_reports_partial_batch_failures(
    sam_template: dict[str, Any], cloudformation: dict[str, Any]
) -> None:
    event = functions(sam_template)["IngestFunction"]["Properties"]["Events"]["UploadedObjects"]
    assert event["Type"] == "SQS"
    assert event["Properties"]["Queue"] == {"Fn::GetAtt": ["UploadQueue", "Arn"]}
    assert 1 <= event["Properties"]["BatchSize"] <= 10
    (mapping,) = resources_of(cloudformation, "AWS::Lambda::EventSourceMapping").values()
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]


def test_upload_and_ingest_touch_only_their_prefixes(sam_template: dict[str, Any]) -> None:
    def s3_grants(function: str) -> dict[str, set[str]]:
        grants: dict[str, set[str]] = {}
        for statement in statements_of(sam_template, function):
            for action in as_list(statement["Action"]):
                if action.startswith("s3:"):
                    resource = statement["Resource"]
                    key = resource.get("Fn::Sub", "bucket")
                    grants.setdefault(key, set()).add(action)
        return grants

    # Signing a presigned POST needs PutObject on the key it allows, and nothing more.
    assert s3_grants("UploadFunction") == {"${UploadBucket.Arn}/uploads/*": {"s3:PutObject"}}
    assert s3_grants("IngestFunction") == {
        "${UploadBucket.Arn}/uploads/*": {"s3:GetObject", "s3:DeleteObject"},
        "${UploadBucket.Arn}/verified/*": {"s3:PutObject", "s3:GetObject", "s3:DeleteObject"},
        "bucket": {"s3:ListBucket"},
    }
    for function in ("UploadFunction", "IngestFunction"):
        variables = functions(sam_template)[function]["Properties"]["Environment"]["Variables"]
        assert variables["BUCKET_NAME"] == {"Ref": "UploadBucket"}


@pytest.mark.parametrize("function", ["UploadFunction", "IngestFunction"])
def test_the_upload_functions_have_their_handlers(sam_template: dict[str, Any], function: str) -> None:
    properties = functions(sam_template)[function]["Properties"]
    app = REPO_ROOT / properties["CodeUri"] / "app.py"
    tree = ast.parse(app.read_text(encoding="utf-8"))
    assert "lambda_handler" in {node.name for node in tree.body if isinstance(node, ast.FunctionDef)}


def test_the_memos_backends_capacity_is_alarmed_at_80_percent_and_at_full(sam_template: dict[str, Any]) -> None:
    resources = sam_template["Resources"]
    thresholds = {}
    for name in ("MemosCapacityHighAlarm", "MemosCapacityFullAlarm"):
        alarm = resources[name]["Properties"]
        assert (alarm["Namespace"], alarm["MetricName"]) == ("Memmy", "MemosKbCapacityUsedPercent")
        assert alarm["Dimensions"] == [{"Name": "service", "Value": "memmy-kb"}]
        assert (alarm["Statistic"], alarm["ComparisonOperator"]) == ("Maximum", "GreaterThanOrEqualToThreshold")
        thresholds[name] = alarm["Threshold"]
    assert thresholds == {"MemosCapacityHighAlarm": 80, "MemosCapacityFullAlarm": 100}
    # The reconciler, every run, is what publishes it
    reconcile = (Path(__file__).parents[3] / "functions" / "reconcile" / "app.py").read_text()
    assert 'name="MemosKbCapacityUsedPercent"' in reconcile
