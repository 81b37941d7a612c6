"""The client's parts import only downward (``tests/support/client_layers.py``): ``base`` and ``home`` at
the bottom, ``sync`` and ``agents`` over ``home``, the local service (``desktop``) over ``sync``, the CLI
over all, the console script on top. docs/architecture.md, "Client: `memmy_kb_client`"."""

from __future__ import annotations

import pytest

from tests.support import client_layers
from tests.support.import_graph import repository_sources


@pytest.fixture(scope="module")
def known() -> set[str]:
    return set(repository_sources())


def test_no_client_module_imports_a_part_above_or_beside_its_own():
    assert client_layers.forbidden_imports() == []


def test_every_client_module_belongs_to_a_part():
    for name in repository_sources():
        if name.split(".")[0] == client_layers.PACKAGE:
            assert client_layers.part_of(name) in client_layers.MAY_IMPORT


def test_a_module_outside_the_parts_is_refused():
    with pytest.raises(ValueError, match="no part"):
        client_layers.part_of("memmy_kb_client.helpers")


def test_the_console_script_and_python_dash_m_are_the_entry():
    assert client_layers.part_of("memmy_kb_client.entry") == "entry"
    assert client_layers.part_of("memmy_kb_client.cli.__main__") == "entry"
    assert client_layers.part_of("memmy_kb_client.cli.main") == "cli"


def test_the_graph_sees_the_imports_that_matter():
    # A graph that found none of these would pass the test above for the wrong reason.
    pairs = {
        (client_layers.part_of(e.source), client_layers.part_of(e.target))
        for e in client_layers.client_edges()
    }
    expected = {
        ("entry", "cli"),
        ("entry", "agents"),
        ("cli", "desktop"),
        ("cli", "agents"),
        ("cli", "sync"),
        ("desktop", "sync"),
        ("desktop", "home"),
        ("agents", "home"),
        ("sync", "home"),
        ("sync", "base"),
        ("home", "base"),
    }
    assert expected <= pairs


_FUNCTION = "def f():\n    {}\n"


@pytest.mark.parametrize(
    ("source", "code", "refused"),
    [
        ("memmy_kb_client.home.paths", "from memmy_kb_client.desktop import state", True),
        ("memmy_kb_client.home.advice", _FUNCTION.format("from memmy_kb_client.cli.main import main"), True),
        ("memmy_kb_client.http_client", "from memmy_kb_client.home import paths", True),
        ("memmy_kb_client.sync.roots", "from memmy_kb_client.desktop.server import DesktopService", True),
        ("memmy_kb_client.sync.run", "from memmy_kb_client.agents.hook import run", True),
        (
            "memmy_kb_client.agents.hook_status",
            _FUNCTION.format("from memmy_kb_client.desktop import status_text"),
            True,
        ),
        ("memmy_kb_client.agents.mcp_service", "from memmy_kb_client.sync import links", True),
        ("memmy_kb_client.desktop.state", "from memmy_kb_client.agents import hook", True),
        ("memmy_kb_client.desktop.routes", "import memmy_kb_client.cli.main", True),
        (
            "memmy_kb_client.desktop.link_routes",
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from memmy_kb_client.cli import entries\n",
            True,
        ),
        ("memmy_kb_client.home.control", "from memmy_kb_client.http_client import classify", False),
        ("memmy_kb_client.sync.roots", "from memmy_kb_client.home import paths", False),
        ("memmy_kb_client.agents.hook", "from memmy_kb_client.home.raw_request import post_proven", False),
        ("memmy_kb_client.desktop.link_routes", "from memmy_kb_client.sync.links import Links", False),
        (
            "memmy_kb_client.cli.desktop_commands",
            "from memmy_kb_client.desktop.server import DesktopService",
            False,
        ),
        ("memmy_kb_client.entry", "from memmy_kb_client.cli.main import main", False),
    ],
)
def test_an_import_is_judged_by_the_parts_of_both_ends(known, source, code, refused):
    edges = client_layers.imports_of(code, source, known)
    assert edges
    assert all(client_layers.forbidden(e) is refused for e in edges)
