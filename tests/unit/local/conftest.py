"""Fixtures of the local stack's unit tests: the repository's template.yaml, read once per module."""

from __future__ import annotations

from typing import Any

import pytest

from memmy_local.template import TEMPLATE_PATH, load_template


@pytest.fixture(scope="module")
def template() -> dict[str, Any]:
    return load_template(TEMPLATE_PATH)
