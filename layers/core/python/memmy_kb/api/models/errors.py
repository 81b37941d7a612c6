"""The error shape every route answers, and what a 401 may look like (the authorizer's or ours)."""

from __future__ import annotations

from pydantic import ConfigDict, RootModel

from memmy_kb.api.models.base import ApiModel


class ErrorBody(ApiModel):
    code: str
    message: str
    details: object | None = None


class ErrorResponse(ApiModel):
    error: ErrorBody


class GatewayRefusal(ApiModel):
    """What API Gateway's JWT authorizer answers itself (401), before any function runs."""

    message: str


class UnauthorizedResponse(RootModel):  # type: ignore[type-arg]  # the root's type is the field below
    """A 401: the authorizer's own ``{"message"}`` for a missing or bad token, or our error shape for a
    token whose subject cannot be a Memmy user id."""

    # Built for the OpenAPI document only (no route returns it). A parametrised ``RootModel[...]`` would
    # build its parent class, and the error models with it, when this module is imported: on every cold start.
    model_config = ConfigDict(defer_build=True)

    root: ErrorResponse | GatewayRefusal
