import os

import pytest

from tests.support.keychain import isolate_keyring

pytest_plugins = ["tests.support.emulator", "tests.support.aws", "tests.support.stack", "tests.support.stage"]

# Powertools reads these when its Logger/Metrics/Tracer are built, which is at a handler module's import;
# set them before any test can import one (the functions get the same values from template.yaml).
os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "memmy-kb")
os.environ.setdefault("POWERTOOLS_METRICS_NAMESPACE", "MemmyTest")
os.environ.setdefault("POWERTOOLS_TRACE_DISABLED", "true")


@pytest.fixture(autouse=True)
def own_keyring(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test its own keyring, whatever ran before it in this process (tests/support/keychain.py)."""
    isolate_keyring(monkeypatch)
