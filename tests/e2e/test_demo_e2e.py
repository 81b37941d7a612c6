"""`memmy-local up --demo` (`make run ARGS=--demo`): a first look already populated with the product story.

The salesperson reads the KB the colleague shared (the story's two documents, processed), the third
user's KB stays out of the salesperson's recall, the desktop service beside the stack is signed in as
the salesperson, and the printed page link opens the page once. The demo's desktop has a home of its own:
a hook installed with it answers from the story, and a plain `make run` afterwards starts signed out.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from memmy_local.demo import COLLEAGUE, SALESPERSON, SHARED_KB, STORY_FILES, THIRD_KB, THIRD_USER, token_for
from tests.support.polling import wait_until
from tests.support.stack import RunningStack, run_hook, start_stack, stop_stack

pytestmark = [
    pytest.mark.e2e,
    pytest.mark.local_stack("a stack of its own, started with --demo"),
]

PAGE_LINK = re.compile(r"page, as \S+: (http://127\.0\.0\.1:\d+/open\?code=\S+)  \(one use, within 10 minutes")
QUESTION = "MemOS 开源版和商业版有什么区别"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("demo")


@pytest.fixture(scope="module")
def demo(workdir: Path) -> Iterator[tuple[subprocess.Popen[bytes], RunningStack]]:
    process, stack = start_stack(workdir, extra=["--demo", "--desktop-port", "0"])
    try:
        yield process, stack
    finally:
        stop_stack(process)


@pytest.fixture(scope="module")
def demo_stack(demo: tuple[subprocess.Popen[bytes], RunningStack]) -> RunningStack:
    return demo[1]


def _api(stack: RunningStack, user: object) -> httpx.Client:
    token = token_for(user, key_path=stack.key_path, issuer=stack.issuer)  # type: ignore[arg-type]
    return httpx.Client(base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=30)


def test_the_demo_seeds_the_story_and_prints_the_salespersons_page_link(demo_stack: RunningStack) -> None:
    found = wait_until(
        lambda: PAGE_LINK.search(demo_stack.log()),
        timeout=60,
        message=lambda: f"the demo's page link:\n{demo_stack.log()[-3000:]}",
    )
    assert "could not be seeded" not in demo_stack.log()

    with _api(demo_stack, SALESPERSON) as sales, _api(demo_stack, THIRD_USER) as third:
        # The salesperson reads the colleague's KB, its two documents processed
        (shared,) = sales.get("/knowledge-bases").json()["items"]
        assert (shared["name"], shared["role"]) == (SHARED_KB, "reader")
        assert shared["owner"]["display_name"] == COLLEAGUE.name
        files = sales.get(f"/knowledge-bases/{shared['id']}/files").json()["files"]
        assert {f["name"]: f["status"] for f in files} == dict.fromkeys(STORY_FILES, "available")
        # ...and recall answers from it, never from the third user's KB
        answer = sales.post("/recall", json={"query": QUESTION}).json()
        assert "99.9% 可用性 SLA" in answer["context"]
        assert answer["scope_size"] == 1
        assert [kb["name"] for kb in third.get("/knowledge-bases").json()["items"]] == [THIRD_KB]

    # The link opens the page once, as the salesperson
    with httpx.Client(timeout=10) as browser:
        opened = browser.get(found.group(1))
        assert opened.status_code == 303
        session = browser.get(f"{found.group(1).split('/open')[0]}/api/session")
        assert session.status_code == 200, session.text
        assert session.json()["user"]["user_id"] == SALESPERSON.user_id
        # Opened again in the same browser, it goes on to the page; in another, it is spent
        assert browser.get(found.group(1)).headers["location"] == "/"
        assert httpx.get(found.group(1), timeout=10).status_code == 403


def test_the_demo_keeps_its_login_to_itself(
    demo: tuple[subprocess.Popen[bytes], RunningStack], workdir: Path
) -> None:
    process, demo_stack = demo
    home = workdir / "home"  # the stack's MEMMY_KB_HOME
    wait_until(lambda: PAGE_LINK.search(demo_stack.log()), timeout=60, message=lambda: demo_stack.log()[-3000:])
    # The banner names the demo's home with each desktop command
    assert f"MEMMY_KB_HOME={home / 'demo'} " in demo_stack.log()
    assert (home / "demo" / "desktop" / "service.json").exists()
    assert not (home / "desktop" / "service.json").exists()

    # A hook installed for the demo (with its MEMMY_KB_HOME) answers from the story
    event = json.dumps({"hook_event_name": "UserPromptSubmit", "prompt": QUESTION}).encode()
    hooked, _ = run_hook({"MEMMY_KB_HOME": str(home / "demo")}, event)
    assert "99.9% 可用性 SLA" in hooked.stdout.decode(), hooked

    # Ctrl-C, then a plain `make run` on the same home: it starts signed out, as the README says
    assert stop_stack(process) == 0
    plain_process, plain = start_stack(workdir, extra=["--desktop-port", "0"])
    try:
        banner = plain.log()
        assert "login:  logged out" in banner, banner[-3000:]
        assert "logged in as sales" not in banner
    finally:
        stop_stack(plain_process)
    # ...and the demo's own login is still there for the next demo
    assert list((home / "demo" / "desktop-private").glob("cloud-login*"))
