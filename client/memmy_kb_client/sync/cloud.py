"""The SDK calls a pass makes, as protocols whose methods are ``MemmyClient``'s own: each member is taken
from the SDK (``the_sdks``), so its parameters, defaults and reply type are the SDK's, read by mypy from
the SDK and found by ``inspect`` on the SDK's function; nothing here restates a signature. A fake (the
tests' ``FakeKb``) is checked against these by mypy, so a change to an SDK method reaches it.

The SDK (and httpx with it) is loaded with this module: only the pass imports it (``execute.py``,
``run.py``); the tree reader and the links name these under ``TYPE_CHECKING``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar

from memmy_kb_client.sdk import MemmyClient

_P = ParamSpec("_P")
_R = TypeVar("_R")


def the_sdks(
    method: Callable[Concatenate[MemmyClient, _P], _R],
) -> Callable[[Callable[..., Any]], Callable[Concatenate[Any, _P], _R]]:
    """Make the decorated protocol member ``MemmyClient``'s method of the same name, for the type checker
    (its parameters and reply, the instance left open) and at run time (the SDK's function itself)."""

    def member(stub: Callable[..., Any]) -> Callable[Concatenate[Any, _P], _R]:
        if stub.__name__ != method.__name__:
            raise TypeError(f"the protocol's {stub.__name__} is not the SDK's {method.__name__}")
        return method

    return member


class Lister(Protocol):
    """What reading the KB's tree calls (``remote.read_tree``)."""

    @the_sdks(MemmyClient.list_files)
    def list_files(self, *args: Any, **kwargs: Any) -> Any: ...


class Cloud(Lister, Protocol):
    """The calls a pass makes while it carries out its plan (``execute.Executor``)."""

    @the_sdks(MemmyClient.get_file)
    def get_file(self, *args: Any, **kwargs: Any) -> Any: ...

    @the_sdks(MemmyClient.create_folder)
    def create_folder(self, *args: Any, **kwargs: Any) -> Any: ...

    @the_sdks(MemmyClient.request_upload)
    def request_upload(self, *args: Any, **kwargs: Any) -> Any: ...

    @the_sdks(MemmyClient.request_replacement)
    def request_replacement(self, *args: Any, **kwargs: Any) -> Any: ...

    @the_sdks(MemmyClient.delete_file)
    def delete_file(self, *args: Any, **kwargs: Any) -> Any: ...

    @the_sdks(MemmyClient.dismiss_upload)
    def dismiss_upload(self, *args: Any, **kwargs: Any) -> Any: ...


class SyncCloud(Cloud, Protocol):
    """A whole pass: the plan's calls and the KB it syncs into (``run.run_pass``)."""

    @the_sdks(MemmyClient.get_knowledge_base)
    def get_knowledge_base(self, *args: Any, **kwargs: Any) -> Any: ...


class CloudClient(SyncCloud, Protocol):
    """A client the links open for their passes and close after (``links.Links``)."""

    @the_sdks(MemmyClient.close)
    def close(self, *args: Any, **kwargs: Any) -> Any: ...
