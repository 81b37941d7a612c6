"""The MemOS API-key providers, with Secrets Manager on moto."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from aws_lambda_powertools.utilities import parameters
from moto import mock_aws

from memmy_kb.adapters.memos.backends import MemosBackends
from memmy_kb.adapters.memos.key import (
    MemosBackendConfig,
    SecretApiKeyProvider,
    SecretBackendsProvider,
    StaticApiKeyProvider,
)
from memmy_kb.domain.engine import MemosApiKeyError, MemosBackendUnknown

SECRET_ID = "memmy/memos-api-key"
KEY = "mpg-first-key-0001"
ROTATED_KEY = "mpg-rotated-key-0002"


@pytest.fixture(autouse=True)
def _aws(aws_env: None) -> Iterator[None]:
    parameters.clear_caches()
    with mock_aws():
        yield
    parameters.clear_caches()


@pytest.fixture
def secrets() -> Any:
    return boto3.client("secretsmanager", region_name="us-east-1")


def test_a_bare_secret_is_the_key(secrets: Any) -> None:
    secrets.create_secret(Name=SECRET_ID, SecretString=f"  {KEY}\n")
    assert SecretApiKeyProvider(SECRET_ID)() == KEY


def test_a_json_secret_holds_the_key_under_api_key(secrets: Any) -> None:
    secrets.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY, "other": "x"}))
    assert SecretApiKeyProvider(SECRET_ID)() == KEY


def test_a_binary_secret_is_read_as_text(secrets: Any) -> None:
    secrets.create_secret(Name=SECRET_ID, SecretBinary=KEY.encode())
    assert SecretApiKeyProvider(SECRET_ID)() == KEY


def test_the_key_is_cached_until_a_forced_refresh(secrets: Any) -> None:
    # Given a provider that has read the key once
    secrets.create_secret(Name=SECRET_ID, SecretString=KEY)
    provider = SecretApiKeyProvider(SECRET_ID, max_age=300)
    assert provider() == KEY
    # When the secret is rotated
    secrets.put_secret_value(SecretId=SECRET_ID, SecretString=ROTATED_KEY)
    # Then the cached key is served until a refresh is forced, and the refreshed one after that
    assert provider(False) == KEY
    assert provider(True) == ROTATED_KEY
    assert provider() == ROTATED_KEY


def test_a_zero_max_age_reads_every_time(secrets: Any) -> None:
    secrets.create_secret(Name=SECRET_ID, SecretString=KEY)
    provider = SecretApiKeyProvider(SECRET_ID, max_age=0)
    assert provider() == KEY
    secrets.put_secret_value(SecretId=SECRET_ID, SecretString=ROTATED_KEY)
    assert provider() == ROTATED_KEY


@pytest.mark.parametrize(
    "secret_string",
    [
        "   ",
        json.dumps({"key": KEY}),
        json.dumps({"api_key": ""}),
        json.dumps({"api_key": 5}),
        "{" + KEY,
        # a list of backends is no one key: its whole text (every key in it) must never be sent as one
        json.dumps([{"id": "p1", "api_key": KEY, "max_kbs": 1}]),
    ],
)
def test_unusable_secrets_are_refused_without_quoting_them(secrets: Any, secret_string: str) -> None:
    secrets.create_secret(Name=SECRET_ID, SecretString=secret_string)
    with pytest.raises(MemosApiKeyError) as caught:
        SecretApiKeyProvider(SECRET_ID)()
    assert KEY not in str(caught.value)
    assert caught.value.__cause__ is None


def test_a_missing_secret_raises() -> None:
    with pytest.raises(parameters.exceptions.GetParameterError):
        SecretApiKeyProvider("does/not/exist")()


def test_the_key_never_reaches_logs_or_reprs(
    secrets: Any, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)
    secrets.create_secret(Name=SECRET_ID, SecretString=json.dumps({"api_key": KEY}))
    provider = SecretApiKeyProvider(SECRET_ID)
    provider()
    provider(True)
    out = capsys.readouterr()
    # botocore's own DEBUG logging prints response bodies (secrets included): only our logs are checked.
    ours = [r.getMessage() for r in caplog.records if not r.name.startswith(("botocore", "urllib3"))]
    visible = " ".join([*ours, out.out, out.err, repr(provider), repr(StaticApiKeyProvider(KEY))])
    assert KEY not in visible


def test_static_provider() -> None:
    provider = StaticApiKeyProvider(f" {KEY} ")
    assert provider() == KEY
    assert provider(True) == KEY
    with pytest.raises(MemosApiKeyError):
        StaticApiKeyProvider("  ")


def test_the_secrets_client_comes_from_the_factory_once(secrets: Any) -> None:
    # Given a provider handed the function's own Secrets Manager client (not a session of Parameters' own)
    secrets.create_secret(Name=SECRET_ID, SecretString=KEY)
    made: list[Any] = []
    reads: list[str] = []
    secrets.meta.events.register(
        "before-parameter-build.secrets-manager.GetSecretValue",
        lambda **kwargs: reads.append(kwargs["params"]["SecretId"]),
    )

    def factory() -> Any:
        made.append(secrets)
        return secrets

    provider = SecretApiKeyProvider(SECRET_ID, max_age=0, client_factory=factory)
    # When the key is read three times, once forced
    assert provider() == KEY
    assert provider(True) == KEY
    assert provider() == KEY
    # Then the one client was asked for once and every read went through it
    assert made == [secrets]
    assert reads == [SECRET_ID] * 3


# -- the list of MemOS backends ---------------------------------------------------------------------

DEFAULT_URL = "https://memos.example/api/openmem/v1"


def backends_of(secrets: Any, value: str) -> list[MemosBackendConfig]:
    secrets.create_secret(Name=SECRET_ID, SecretString=value)
    provider = SecretBackendsProvider(SECRET_ID, default_base_url=DEFAULT_URL, default_max_kbs=100)
    return provider.backends()


@pytest.mark.parametrize("value", [KEY, json.dumps({"api_key": KEY})], ids=["bare", "json"])
def test_a_single_key_secret_is_one_default_backend_at_the_configured_url(secrets: Any, value: str) -> None:
    assert backends_of(secrets, value) == [MemosBackendConfig("default", DEFAULT_URL, KEY, max_kbs=100)]


@pytest.mark.parametrize("wrapped", [False, True], ids=["list", "object"])
def test_a_list_secret_gives_each_backend_with_its_url_key_cap_rate_and_draining_flag(
    secrets: Any, wrapped: bool
) -> None:
    entries = [
        {"id": "p1", "base_url": "https://a.example/v1", "api_key": KEY, "max_kbs": 100, "max_qps": 40},
        {"id": "p2", "base_url": "https://b.example/v1", "api_key": ROTATED_KEY, "max_kbs": 30, "draining": True},
    ]

    found = backends_of(secrets, json.dumps({"backends": entries} if wrapped else entries))

    assert found == [
        MemosBackendConfig("p1", "https://a.example/v1", KEY, max_kbs=100, max_qps=40.0),
        MemosBackendConfig("p2", "https://b.example/v1", ROTATED_KEY, max_kbs=30, draining=True),
    ]
    assert KEY not in repr(found)


@pytest.mark.parametrize(
    "entries",
    [
        [],
        [{"id": "p1", "api_key": KEY}],  # no max_kbs
        [{"id": "p1", "api_key": KEY, "max_kbs": -1}],
        [{"id": "p1", "api_key": "", "max_kbs": 1}],
        [{"id": "", "api_key": KEY, "max_kbs": 1}],
        [{"id": "p#1", "api_key": KEY, "max_kbs": 1}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "ftp://x"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "draining": "yes"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "max_qps": 0}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1}, {"id": "p1", "api_key": ROTATED_KEY, "max_kbs": 1}],
        ["p1"],
        # one project under two ids would be given twice its plan's cap
        [{"id": "p1", "api_key": KEY, "max_kbs": 1}, {"id": "p2", "api_key": KEY, "max_kbs": 1}],
        [
            {"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "https://a.example/v1"},
            {"id": "p2", "api_key": KEY, "max_kbs": 1, "base_url": "https://A.example:443/v1/"},
        ],
        # more ids than the counter item's set holds under DynamoDB's 400 KB
        [{"id": "p1", "api_key": KEY, "max_kbs": 1_000_000}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "max_qps": float("nan")}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "max_qps": float("inf")}],
        # plain http leaves this machine only to a loopback host; no credentials, query or fragment
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "http://memos.example/v1"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": f"https://user:{KEY}@memos.example/v1"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": f"https://memos.example/v1?key={KEY}"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "https://memos.example/v1#x"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "https:///v1"}],
        [{"id": "p1", "api_key": KEY, "max_kbs": 1, "base_url": "https://memos.example:99999/v1"}],
    ],
)
def test_an_unusable_backend_list_is_refused_without_quoting_a_key(secrets: Any, entries: list[Any]) -> None:
    with pytest.raises(MemosApiKeyError) as refused:
        backends_of(secrets, json.dumps(entries))

    assert KEY not in str(refused.value)
    assert ROTATED_KEY not in str(refused.value)


@pytest.mark.parametrize(
    "base_url", ["http://127.0.0.1:8765/v1", "http://localhost:9000", "http://[::1]:80/v1", "https://memos.example:8443/v1"]
)
def test_a_backend_may_use_plain_http_on_loopback_and_https_anywhere(secrets: Any, base_url: str) -> None:
    entry = {"id": "p1", "api_key": KEY, "max_kbs": 10_000, "base_url": base_url}

    assert backends_of(secrets, json.dumps([entry]))[0].base_url == base_url


def test_the_pool_builds_one_client_per_backend_with_its_url_and_key_refreshed_from_the_secret(
    secrets: Any,
) -> None:
    entries = [
        {"id": "p1", "base_url": "https://a.example/v1", "api_key": KEY, "max_kbs": 2},
        {"id": "p2", "base_url": "https://b.example/v1", "api_key": "mpg-p2-0003", "max_kbs": 3},
    ]
    secrets.create_secret(Name=SECRET_ID, SecretString=json.dumps(entries))
    provider = SecretBackendsProvider(SECRET_ID, default_base_url=DEFAULT_URL, default_max_kbs=100)
    built: list[tuple[str, Any]] = []
    pool = MemosBackends(provider.backends, lambda url, key: built.append((url, key)) or url)  # type: ignore[func-returns-value]

    assert [b.id for b in pool.backends()] == ["p1", "p2"]
    assert pool.engine("p2") == "https://b.example/v1"
    assert pool.engine("p2") == "https://b.example/v1"
    assert [url for url, _ in built] == ["https://b.example/v1"]
    key_of_p2 = built[0][1]
    assert key_of_p2(False) == "mpg-p2-0003"
    # A rotated key: the refresh after MemOS refused the old one reads the secret again
    entries[1]["api_key"] = "mpg-p2-rotated"
    secrets.put_secret_value(SecretId=SECRET_ID, SecretString=json.dumps(entries))
    assert key_of_p2(True) == "mpg-p2-rotated"
    with pytest.raises(MemosBackendUnknown):
        pool.engine("p3")
