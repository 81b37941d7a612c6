"""The AWS session's loader knows our services as botocore does, without listing all of botocore's."""

from __future__ import annotations

import os

import pytest
from botocore.exceptions import UnknownServiceError
from botocore.loaders import Loader

from memmy_kb.adapters import aws_session
from memmy_kb.adapters.aws_session import SERVICES, KnownServicesLoader, known_services_session


@pytest.mark.parametrize("type_name", ["service-2", "endpoint-rule-set-1", "paginators-1", "waiters-2"])
def test_it_knows_our_services_as_botocore_does(type_name: str) -> None:
    botocore_says = [s for s in Loader().list_available_services(type_name) if s in SERVICES]
    assert KnownServicesLoader(SERVICES).list_available_services(type_name) == botocore_says


def test_it_reads_only_our_services_folders(monkeypatch: pytest.MonkeyPatch) -> None:
    listed: list[str] = []
    real = os.listdir

    def listdir(path: str) -> list[str]:
        listed.append(os.path.basename(os.path.normpath(path)))
        return real(path)

    monkeypatch.setattr(aws_session.os, "listdir", listdir)
    KnownServicesLoader(SERVICES).list_available_services("service-2")
    assert set(listed) <= set(SERVICES)


def test_its_clients_work_and_other_services_are_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    session = known_services_session()
    assert session.client("dynamodb").meta.service_model.service_name == "dynamodb"
    with pytest.raises(UnknownServiceError):
        session.client("ec2")
