"""The SDK calls a pass makes (``Lister``, ``Cloud``, ``SyncCloud``) are the SDK's own methods, with the
same parameters, defaults and replies as ``MemmyClient`` declares them: the protocols are read as the SDK
is, so that a change to either side fails here (mypy checks the SDK is a ``Cloud`` too)."""

from __future__ import annotations

import inspect

import pytest

from memmy_kb_client.sdk import MemmyClient
from memmy_kb_client.sync.execute import Cloud
from memmy_kb_client.sync.remote import Lister
from memmy_kb_client.sync.run import SyncCloud


def _declared(protocol: type) -> dict[str, inspect.Signature]:
    """The methods ``protocol`` and the protocols under it declare, with their signatures."""
    return {
        name: inspect.signature(value)
        for klass in protocol.__mro__
        if klass.__module__.startswith("memmy_kb_client.")
        for name, value in vars(klass).items()
        if inspect.isfunction(value) and not name.startswith("_")
    }


@pytest.mark.parametrize("protocol", [Lister, Cloud, SyncCloud])
def test_each_call_a_pass_makes_is_the_sdks_own_signature(protocol):
    declared = _declared(protocol)
    assert declared, "a protocol with no methods would pass for the wrong reason"
    assert {name: inspect.signature(getattr(MemmyClient, name)) for name in declared} == declared


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

