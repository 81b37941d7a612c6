"""The functions' Logger, Tracer and Metrics, configured by POWERTOOLS_* variables in the template."""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger()
tracer = Tracer()
metrics = Metrics()
