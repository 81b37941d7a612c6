"""The SDK calls a pass makes (``Lister``, ``Cloud``, ``SyncCloud``, ``CloudClient`` in ``sync/cloud.py``)
are taken from ``MemmyClient``, not restated: each member is the SDK's own function, so its signature is
the SDK's whatever the SDK declares; and the sync's fake (``FakeKb``) has each call with the SDK's
signature, so a change to an SDK method that the fake does not follow fails here (mypy checks it too)."""

from __future__ import annotations

import inspect

import pytest

from memmy_kb_client.sdk import MemmyClient
from memmy_kb_client.sync.cloud import Cloud, CloudClient, Lister, SyncCloud, the_sdks
from tests.support.fake_kb import FakeKb

PROTOCOLS = [Lister, Cloud, SyncCloud, CloudClient]


def _declared(protocol: type) -> dict[str, object]:
    """The members ``protocol`` and the protocols under it declare."""
    return {
        name: value
        for klass in protocol.__mro__
        if klass.__module__ == "memmy_kb_client.sync.cloud"
        for name, value in vars(klass).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_each_call_a_pass_makes_is_the_sdks_own_method(protocol):
    declared = _declared(protocol)
    assert declared, "a protocol with no methods would pass for the wrong reason"
    for name, member in declared.items():
        assert member is vars(MemmyClient)[name], name
        assert inspect.signature(getattr(protocol, name)) == inspect.signature(getattr(MemmyClient, name))


def test_a_pass_makes_the_calls_it_is_known_to_make():
    assert set(_declared(SyncCloud)) == {
        "list_files",
        "get_file",
        "create_folder",
        "request_upload",
        "request_replacement",
        "delete_file",
        "dismiss_upload",
        "get_knowledge_base",
    }
    assert set(_declared(CloudClient)) - set(_declared(SyncCloud)) == {"close"}


def test_a_member_follows_the_sdk_when_the_sdk_changes():
    class Before:
        def list_files(self, kb_id: str, folder_id: str | None = None) -> list[str]:
            return []

    class After:
        def list_files(self, kb_id: str, *, folder_id: str | None = None, depth: int = 1) -> list[str]:
            return []

    def list_files(self, *args, **kwargs): ...

    for sdk in (Before, After):
        assert inspect.signature(the_sdks(sdk.list_files)(list_files)) == inspect.signature(sdk.list_files)  # type: ignore[arg-type]


def test_a_member_named_otherwise_than_the_sdks_method_is_refused():
    def get_files(self, *args, **kwargs): ...

    with pytest.raises(TypeError, match="get_files is not the SDK's get_file"):
        the_sdks(MemmyClient.get_file)(get_files)


@pytest.mark.parametrize("name", sorted(_declared(CloudClient)))
def test_the_sync_fake_has_each_call_as_the_sdk_declares_it(name):
    assert inspect.signature(getattr(FakeKb, name)) == inspect.signature(getattr(MemmyClient, name))


def test_the_fake_check_sees_a_call_the_sdk_changed():
    class ChangedSdk:
        def get_file(self, kb_id: str, file_id: str, *, version: int | None = None) -> object:
            return None

    assert inspect.signature(FakeKb.get_file) != inspect.signature(ChangedSdk.get_file)
