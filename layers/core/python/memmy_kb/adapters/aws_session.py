"""The boto3 session the service's AWS clients come from, without botocore's listing of every service.

botocore checks that a service exists, before it loads the service's model, by listing every service
directory of its data (about 420, two directory reads and a stat each) once per kind of file: for a
client's ``service-2`` and ``endpoint-rule-set-1`` files, close to a thousand directory reads and three
thousand stats, about 50-80 ms of a cold start (``bench/import_time.py``'s "cold import + first recall").
``KnownServicesLoader`` answers that check for the services we name only, by looking in those
services' directories: the same answer botocore gives for them; any other service is unknown.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any

import boto3
import botocore.session
from botocore.loaders import Loader

# Every AWS service memmy_kb builds a client for (memmy_kb.composition).
SERVICES = ("dynamodb", "kms", "s3", "secretsmanager", "sqs", "ssm", "stepfunctions")


class KnownServicesLoader(Loader):
    """botocore's data loader, knowing only ``services``: it never lists the other services' folders."""

    def __init__(self, services: Iterable[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._services = tuple(services)

    def list_available_services(self, type_name: str) -> list[str]:
        """Those of our services that have a ``type_name`` file in some API version, as botocore's
        listing would say for them."""
        return sorted(service for service in self._services if self._has(service, type_name))

    def _has(self, service: str, type_name: str) -> bool:
        for root in self.search_paths:
            folder = os.path.join(root, service)
            if not os.path.isdir(folder):
                continue
            for version in os.listdir(folder):
                if self.file_loader.exists(os.path.join(folder, version, type_name)):
                    return True
        return False


def known_services_session(services: Iterable[str] = SERVICES) -> boto3.Session:
    """A boto3 session as ``boto3.client`` would build (same environment, data path and defaults),
    whose loader knows ``services`` only."""
    core = botocore.session.get_session()
    data_path = core.get_config_variable("data_path")
    # botocore.loaders.create_loader's reading of AWS_DATA_PATH.
    extra = (
        [os.path.expanduser(os.path.expandvars(p)) for p in data_path.split(os.pathsep)]
        if data_path
        else None
    )
    core.register_component("data_loader", KnownServicesLoader(services, extra_search_paths=extra))
    return boto3.Session(botocore_session=core)
