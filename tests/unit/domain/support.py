"""Helpers the domain unit tests share."""

from __future__ import annotations

from collections.abc import Callable
from http import HTTPStatus

import pytest

from memmy_kb.errors import DomainError


def refused(action: Callable[[], object]) -> tuple[HTTPStatus, str]:
    """Run ``action``, which must be refused, and return what the API would answer: status and code."""
    with pytest.raises(DomainError) as err:
        action()
    return err.value.status, err.value.code
