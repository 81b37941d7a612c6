"""Crashes injected into adapter calls: ``Killed`` is the process dying (a ``BaseException``, so that no
``except Exception`` in the service can swallow it), and ``Killer`` arms one wrapped method to raise it
once, before or after the real call."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import pytest


class Killed(BaseException):
    """The process dies here. A ``BaseException``, so that no ``except Exception`` in the service can
    swallow it: a Lambda timeout or kill runs no handler code either."""


Target = tuple[type, str]


@dataclass
class Killer:
    """Wraps adapter methods; the armed one raises ``Killed`` once, before or after doing the real call
    (only within ``phase``, when one is named; at its call ``skip`` + 1 there, to kill between two writes
    of a loop)."""

    armed: tuple[Target, str, str | None] | None = None  # method, "before" | "after", phase
    phase: str | None = None
    skip: int = 0
    fired: list[str] = field(default_factory=list)

    def install(self, monkeypatch: pytest.MonkeyPatch, targets: list[Target]) -> None:
        for cls, name in dict.fromkeys(targets):
            monkeypatch.setattr(cls, name, self._wrap((cls, name), getattr(cls, name)))

    def _wrap(self, target: Target, original: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            when = self._take(target)
            if when == "before":
                raise Killed(f"{target[0].__name__}.{target[1]} (before)")
            result = original(*args, **kwargs)
            if when == "after":
                raise Killed(f"{target[0].__name__}.{target[1]} (after)")
            return result

        return wrapper

    def _take(self, target: Target) -> str | None:
        if self.armed is None:
            return None
        armed, when, phase = self.armed
        if armed != target or (phase is not None and phase != self.phase):
            return None
        if self.skip:
            self.skip -= 1
            return None
        self.armed = None
        self.fired.append(f"{target[0].__name__}.{target[1]} ({when}) in {self.phase}")
        return when

    def arm(self, target: Target, when: str, phase: str | None = None, *, skip: int = 0) -> None:
        self.armed = (target, when, phase)
        self.skip = skip

    def disarm(self) -> None:
        self.armed = None

    @contextmanager
    def during(self, phase: str) -> Iterator[None]:
        self.phase = phase
        try:
            yield
        finally:
            self.phase = None
