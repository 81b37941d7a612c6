"""moto's DynamoDB made to hold only the table's items and to read and write as DynamoDB does: four
patches of moto 5.2.5, each described where it is installed, all installed by ``local_dynamodb()`` with a
fifth that writes item operations' answers quickly (``memmy_local.aws.dynamodb_responses``)
(the local stack, the in-process test fixture and the benchmarks use it; docs/architecture.md, "Local
stack")."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, Final

from memmy_local.aws import dynamodb_responses, dynamodb_rollback

__all__ = [
    "MOTO_VERSION",
    "installed",
    "item_level_rollback",
    "local_dynamodb",
    "partition_queries",
    "plain_json_responses",
    "replace",
    "serialized_writes",
    "untracked_models",
]

MOTO_VERSION: Final = "5.2.5"
"""The moto release whose DynamoDB backend these patches replace parts of (pinned in pyproject.toml)."""

_lock = threading.Lock()
_depth: dict[str, int] = {}
_undo: dict[str, Any] = {}


def _check_version() -> None:
    import moto

    if moto.__version__ != MOTO_VERSION:
        raise RuntimeError(
            f"memmy_local.aws.dynamodb patches moto {MOTO_VERSION}'s DynamoDB backend, not {moto.__version__}: "
            "check BaseModel.__new__, DynamoDBBackend.transact_write_items, Table.query and "
            "DynamoResult.execute_result, then update "
            "MOTO_VERSION"
        )


@contextlib.contextmanager
def installed(name: str, install: Any) -> Iterator[None]:
    """Install patch ``name`` for the duration; nested and concurrent holders share one installation."""
    with _lock:
        if _depth.get(name, 0) == 0:
            _check_version()
            _undo[name] = install()
        _depth[name] = _depth.get(name, 0) + 1
    try:
        yield
    finally:
        with _lock:
            _depth[name] -= 1
            if _depth[name] == 0:
                _undo.pop(name)()


def replace(owner: type, name: str, replacement: Any) -> Any:
    """``owner.name`` set to ``replacement``; returns the undo that puts the original back."""
    original = getattr(owner, name)
    setattr(owner, name, replacement)
    return lambda: setattr(owner, name, original)


@contextlib.contextmanager
def local_dynamodb() -> Iterator[None]:
    """All five patches for the duration; re-entrant."""
    with (
        untracked_models(),
        item_level_rollback(),
        partition_queries(),
        serialized_writes(),
        plain_json_responses(),
    ):
        yield


def plain_json_responses() -> contextlib.AbstractContextManager[None]:
    """moto's DynamoDB item operations answer with their result's JSON, not through moto's serializer
    (``memmy_local.aws.dynamodb_responses``)."""
    return installed("responses", dynamodb_responses.install)


# ------------------------------------------------------------------------------------------ writes

_WRITES: Final = ("put_item", "update_item", "delete_item", "batch_write_item", "transact_write_items")


def _install_serialized() -> Any:
    from moto.dynamodb.models import DynamoDBBackend

    writing = threading.RLock()
    undo = []
    for name in _WRITES:
        original = getattr(DynamoDBBackend, name)

        def one_at_a_time(self: Any, *args: Any, _original: Any = original, **kwargs: Any) -> Any:
            with writing:
                return _original(self, *args, **kwargs)

        undo.append(replace(DynamoDBBackend, name, one_at_a_time))
    return lambda: [put_back() for put_back in reversed(undo)]


def serialized_writes() -> contextlib.AbstractContextManager[None]:
    """moto's DynamoDB write requests run one at a time, as DynamoDB applies one item's writes.

    moto evaluates a write's condition and then writes, in Python, with nothing between two requests'
    threads: 20 concurrent conditional updates of one counter (``used < 6``) let 7 or 8 through. Here every
    write request (``put_item``, ``update_item``, ``delete_item``, ``batch_write_item``,
    ``transact_write_items``) holds one lock, so a condition is always checked against the item it writes.
    """
    return installed("serialized", _install_serialized)


# ------------------------------------------------------------------------------- instance tracking


def _untracked_new(cls: type, *args: Any, **kwargs: Any) -> Any:
    return object.__new__(cls)


def _install_untracked() -> Any:
    from moto.core.common_models import BaseModel
    from moto.dynamodb.models import dynamo_type, table

    classes = [
        value
        for module in (dynamo_type, table)
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, BaseModel)
        and value.__module__ == module.__name__
        and "__new__" not in vars(value)
    ]
    for cls in classes:
        cls.__new__ = staticmethod(_untracked_new)  # type: ignore[method-assign]  # moto's class, patched
        cls.instances_tracked = []  # type: ignore[attr-defined]  # what was tracked so far, let go

    def undo() -> None:
        for cls in classes:
            del cls.__new__

    return undo


def untracked_models() -> contextlib.AbstractContextManager[None]:
    """moto's DynamoDB models (``Item``, ``Table``, indexes, stream records) are not kept in
    ``instances_tracked`` while this is active.

    moto's ``BaseModel.__new__`` (``moto/core/common_models.py``) appends every model instance to its
    class's ``instances_tracked`` list, for the ``/moto-api/data.json`` dashboard, and only a reset empties
    it: every item written, every copy ``update_item`` keeps of the old item, every copy ``Table.query``
    returns and every item of every table copy a transaction made stayed referenced forever (measured with
    tracemalloc: 200 transactions on a 2,000-item table left 800,500 ``Item`` and 400 ``Table`` instances,
    950 MB). The DynamoDB model classes get a ``__new__`` that does not track; the dashboard no longer
    lists them.
    """
    return installed("untracked", _install_untracked)


# ------------------------------------------------------------------------------------ transactions


def _install_rollback() -> Any:
    from moto.dynamodb.models import DynamoDBBackend

    return replace(DynamoDBBackend, "transact_write_items", dynamodb_rollback.transact_write_items)


def item_level_rollback() -> contextlib.AbstractContextManager[None]:
    """moto's ``transact_write_items`` snapshots only the items it writes while this is active.

    moto's ``DynamoDBBackend.transact_write_items`` (``moto/dynamodb/models/__init__.py``) deep-copied every
    table a transaction names and rolled back by putting the copies in place of the tables. Ours copies,
    before an action's write, the one item that action targets (or remembers it was absent); a rollback
    puts back those items (and drops the stream records the transaction added). The rest is moto's code
    path: the same validation order, per-action condition evaluation and cancellation reasons
    (``ConditionalCheckFailed`` with ``Item`` under ``ReturnValuesOnConditionCheckFailure: ALL_OLD``,
    ``None`` for the actions that passed), the same errors that stop a transaction outright (more than 100
    actions, two actions on one item, a validation error). Two differences, both towards DynamoDB: an
    action with two operations is refused before anything is written (moto raised it mid-way, keeping the
    earlier writes), and a rollback no longer replaces the table, so a write made meanwhile by another
    request to another item survives it. moto ignores ``ClientRequestToken``; so does this.
    """
    return installed("rollback", _install_rollback)


# ----------------------------------------------------------------------------------------- queries


class _TableView:
    """A table as ``Table.query`` reads it, its ``all_items()`` narrowed to ``items`` (one call only:
    the table itself is not changed, so concurrent requests are unaffected)."""

    def __init__(self, table: Any, items: list[Any]) -> None:
        self._table = table
        self._items = items

    def all_items(self) -> list[Any]:
        return self._items

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def _partition(table: Any, hash_key: Any) -> list[Any]:
    """The base table's items under ``hash_key``, in range-key order (what ``all_items`` yielded)."""
    found = table.items.get(hash_key)
    if found is None:
        return []
    if table.range_key_attr is None:
        return [found]
    return sorted(found.values(), key=lambda item: item.range_key)


def _index_partition(table: Any, conditions: list[tuple[str, Any]]) -> list[Any]:
    """The items whose index hash key attributes equal ``conditions``, unsorted (moto sorts them)."""
    matches = []
    for stored in table.items.values():
        for item in stored.values() if table.range_key_attr is not None else (stored,):
            # moto's own test, first thing in its loop over the items.
            found = [item.attrs.get(name) for name, _ in conditions]
            if all(
                value and value == expected for value, (_, expected) in zip(found, conditions, strict=True)
            ):
                matches.append(item)
    return matches


def _install_partition_queries() -> Any:
    import inspect

    from moto.dynamodb.models.table import Table

    # moto's own query, called with the table or with a view of one of its partitions.
    original: Callable[..., Any] = Table.query
    signature = inspect.signature(original)

    def query(self: Any, *args: Any, **kwargs: Any) -> Any:
        arguments = signature.bind(self, *args, **kwargs).arguments
        hash_key, index_name = arguments.get("hash_key"), arguments.get("index_name")
        conditions = arguments.get("hash_key_conditions") or []
        if index_name:
            if not conditions:
                return original(self, *args, **kwargs)
            view = _TableView(self, _index_partition(self, conditions))
        elif hash_key is not None:
            view = _TableView(self, _partition(self, hash_key))
        else:
            return original(self, *args, **kwargs)
        return original(view, *args, **kwargs)

    return replace(Table, "query", query)


def partition_queries() -> contextlib.AbstractContextManager[None]:
    """moto's ``Table.query`` reads only the key's partition while this is active.

    moto's ``Table.query`` (``moto/dynamodb/models/table.py``) sorted every item of the table and then kept
    the key's partition. For a base-table query ours hands moto's code just that partition; for an index
    query, the items whose index hash key matches (one unsorted pass; moto then sorts those few). Results,
    ordering, pagination, ``ScannedCount`` and filters are moto's own code.
    """
    return installed("queries", _install_partition_queries)
