"""One login for the desktop and the CLI, end to end: ``memmy-kb desktop serve`` signed in, and the CLI
with no login of its own (no ``config.json``, no token or endpoint in its environment) creates a knowledge
base, lists it, uploads a file (its bytes straight to storage with the presigned POST) and recalls it,
every call to the cloud made by the desktop service with its login."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path

import pytest

from tests.support.e2e_desktop import clean_env, logged_in_desktop
from tests.support.polling import wait_until
from tests.support.stack import CLI
from tests.support.stage import Stage

pytestmark = pytest.mark.e2e

MARKER = f"LAMBDA{uuid.uuid4().hex[:6].upper()}"


def test_with_the_desktop_signed_in_and_no_other_login_the_cli_works(stage: Stage, tmp_path: Path) -> None:
    person = stage.user(f"one-{uuid.uuid4().hex[:8]}", name="One Login")
    (tmp_path / "desktop").mkdir()
    with logged_in_desktop(tmp_path / "desktop", stage, person.token) as desktop:
        env = clean_env(desktop.home)
        assert not {"MEMMY_KB_TOKEN", "MEMMY_KB_ENDPOINT"} & set(env)
        assert not (desktop.home / "config.json").exists()

        def cli(*args: str) -> str:
            done = subprocess.run(  # noqa: S603 - our own CLI
                [*CLI, *args], capture_output=True, text=True, env=env, timeout=120, check=False
            )
            assert done.returncode == 0, (args, done.stdout, done.stderr)
            return done.stdout

        me = cli("me")
        said = f"through the desktop service at {desktop.url}, signed in as {person.user_id}"
        assert any(line.startswith("Login:") and said in line for line in me.splitlines()), me

        kb_id = cli("kb", "create", stage.kb_name("一个登录")).split()[0]
        assert kb_id in cli("kb", "ls")

        document = tmp_path / "出差规定.md"
        document.write_text(f"# 出差规定\n\n出差住宿需要酒店发票，编号 {MARKER}。\n", encoding="utf-8")
        uploaded = cli("files", "upload", kb_id, str(document), "--wait", "--timeout", "90")
        assert uploaded.startswith("available"), uploaded

        def recalled() -> str | None:
            out = cli("recall", f"出差住宿需要什么发票 {MARKER}")
            return out if MARKER in out else None

        answer = wait_until(recalled, timeout=60, message=lambda: "the excerpt to be recalled")
        assert "《出差规定.md》" in answer
        cli("kb", "rm", kb_id, "--yes")
