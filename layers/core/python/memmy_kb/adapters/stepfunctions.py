"""The cleanup state machine (infra/statemachines/cleanup.asl.json) as the domain's ``CleanupExecutions``.

An execution's name is unique per state machine for 90 days, and starting one again with the same name
and input while it runs returns the running one: the name is what makes a repeated start harmless. The
input names the outbox item by its key, which the state machine's DynamoDB tasks delete on success or
mark failed. Throttling, a 5xx or a timeout is raised as ``StoreUnavailable`` (``memmy_kb.adapters.aws_errors``).
"""

from __future__ import annotations

import json
from typing import Any

from botocore.exceptions import ClientError

from memmy_kb.adapters.aws_errors import TranslatedClient
from memmy_kb.adapters.dynamodb.keys import cleanup_key
from memmy_kb.adapters.dynamodb.table import dump


class CleanupStateMachine:
    """Starts cleanup executions through a low-level Step Functions client (passed in)."""

    def __init__(self, state_machine_arn: str, client: Any) -> None:
        self.arn = state_machine_arn
        self._client = TranslatedClient(client, "state machine")

    def start(self, cleanup_id: str, execution_name: str) -> None:
        """Start (or find running) the execution ``execution_name`` for ``cleanup_id``.

        An execution of that name that already exists, running or finished, counts as started: a finished
        one either deleted the outbox item or marked it failed for the reconciler's next attempt, which
        uses a new name.
        """
        payload = json.dumps({"cleanup_id": cleanup_id, "key": dump(cleanup_key(cleanup_id))}, sort_keys=True)
        try:
            self._client.start_execution(stateMachineArn=self.arn, name=execution_name, input=payload)
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") == "ExecutionAlreadyExists":
                return
            raise
