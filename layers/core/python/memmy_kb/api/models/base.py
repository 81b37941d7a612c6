"""What every API body shares: ``ApiModel``, the ``Name`` type (a user-given, displayed name) and
``TeamPerson`` (someone a team or a team share names: the team routes' and the KB-team routes')."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from memmy_kb.domain.display import hidden_characters
from memmy_kb.domain.knowledge_bases.sibling_names import normal_name

MAX_NAME_LENGTH = 100


def _clean_name(value: str) -> str:
    # Stored and checked as the service compares names: trimmed, in NFC (memmy_kb.domain.knowledge_bases.sibling_names).
    value = normal_name(value)
    if not 1 <= len(value) <= MAX_NAME_LENGTH:
        raise ValueError(f"must be 1 to {MAX_NAME_LENGTH} characters after trimming")
    if hidden_characters(value):
        raise ValueError("must not contain control, invisible or unassigned characters")
    return value


Name = Annotated[str, Field(min_length=1, max_length=1000), AfterValidator(_clean_name)]


class ApiModel(BaseModel):
    # Validators are built when a body is first read or written, not at import: a function serves a few
    # of these routes, and the import is on every cold start.
    model_config = ConfigDict(extra="ignore", defer_build=True)


class TeamPerson(ApiModel):
    user_id: str
    display_name: str
