"""The load test's side of its stack: start ``bench.load_stack`` as a subprocess, wait for its ready line,
then reach its API, control endpoint and MemOS emulator, break it on purpose, and stop it."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from bench.load_model import LoadSettings, memos_projects
from bench.load_stack import FAULT_PREFIX, READY_PREFIX

STACK_READY_SECONDS = 90
REQUEST_TIMEOUT_SECONDS = 30


@dataclass
class Stack:
    api_url: str
    memos_url: str
    control_url: str
    home: Path
    log_path: Path
    limits: dict[str, str]
    process: subprocess.Popen[bytes]
    recall_limits: dict[str, str] = field(default_factory=dict)  # the recall function's per-user limit
    broken: bool = False
    _dynamodb: Any = field(default=None, repr=False)  # a client of the stack's moto, made on first use

    def token(self, user: str, **claims: Any) -> str:
        from memmy_local import tokens
        from memmy_local.control import read_state

        issuer = read_state(self.home)["issuer"]  # the stack's identity provider, on any free port
        return tokens.issue_token(user, key_path=tokens.signing_key_path(self.home), issuer=issuer, **claims)

    def client(self, token: str) -> httpx.Client:
        """A client of the stack's API holding ``token``."""
        return httpx.Client(
            base_url=self.api_url,
            headers={"Authorization": f"Bearer {token}"},
            timeout=REQUEST_TIMEOUT_SECONDS,
        )

    def reconcile(self) -> dict[str, Any]:
        from memmy_local.control import TOKEN_HEADER, read_state

        state = read_state(self.home)
        reply = httpx.post(
            f"{self.control_url}/schedules/ReconcileFunction",
            headers={TOKEN_HEADER: state["token"]},
            timeout=120,
        )
        body: dict[str, Any] = reply.json()
        return body

    def item_count(self) -> int:
        """How many items the stack's DynamoDB tables hold (moto answers ``ItemCount`` exactly, at once)."""
        if self._dynamodb is None:
            import boto3

            from memmy_local.control import read_state
            from memmy_local.lambdas.environment import FAKE_CREDENTIAL

            self._dynamodb = boto3.client(
                "dynamodb",
                endpoint_url=read_state(self.home)["moto_url"],
                region_name="us-east-1",
                aws_access_key_id=FAKE_CREDENTIAL,
                aws_secret_access_key=FAKE_CREDENTIAL,
            )
        tables = self._dynamodb.list_tables()["TableNames"]
        return sum(int(self._dynamodb.describe_table(TableName=t)["Table"]["ItemCount"]) for t in tables)

    def memos_state(self) -> dict[str, Any]:
        state: dict[str, Any] = httpx.get(f"{self.memos_url}/_emulator/state", timeout=30).json()
        return state

    def break_recall_scope(self) -> None:
        """Break the running stack on purpose (``bench.load_stack``) and wait until it says it is broken."""
        self.process.send_signal(signal.SIGUSR1)
        deadline = time.monotonic() + 10
        while FAULT_PREFIX not in self.log_path.read_text(errors="replace"):
            if time.monotonic() > deadline:
                raise RuntimeError("the load stack did not confirm the fault")
            time.sleep(0.05)
        self.broken = True

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def start_stack(workdir: Path, settings: LoadSettings) -> Stack:
    workdir.mkdir(parents=True, exist_ok=True)
    home = workdir / "home"
    log_path = workdir / "stack.log"
    command = [sys.executable, "-m", "bench.load_stack", "--home", str(home)]
    command += ["--processing-delay", str(settings.processing_delay)]
    command += ["--memos-projects", str(memos_projects(settings.users))]
    if settings.keep_limits:
        command.append("--keep-limits")
    if settings.fault:
        command += ["--fault", settings.fault]
    if settings.memos_qps:
        command += ["--memos-qps", str(settings.memos_qps)]
    for name, value in settings.function_settings.items():
        command += ["--set", f"{name}={value}"]
    env = {**os.environ, "MEMMY_KB_HOME": str(home), "PYTHONUNBUFFERED": "1"}
    repo = Path(__file__).resolve().parents[1]
    with log_path.open("wb") as log_file:
        process = subprocess.Popen(  # noqa: S603 - our own module with fixed arguments
            command, stdout=log_file, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=repo
        )
    deadline = time.monotonic() + STACK_READY_SECONDS
    while True:
        text = log_path.read_text(errors="replace")
        for line in text.splitlines():
            if line.startswith(READY_PREFIX):
                ready = json.loads(line[len(READY_PREFIX) :])
                return Stack(
                    api_url=ready["api_url"],
                    memos_url=ready["memos_url"],
                    control_url=ready["control_url"],
                    home=home,
                    log_path=log_path,
                    limits=ready["limits"],
                    recall_limits=ready["recall_limits"],
                    process=process,
                )
        if process.poll() is not None or time.monotonic() > deadline:
            if process.poll() is None:
                process.kill()
                process.wait()
            raise RuntimeError(f"the load stack did not start:\n{text[-4000:]}")
        time.sleep(0.1)
