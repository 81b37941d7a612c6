"""The core's layers hold: imports only go down, every module has a layer (the size cap: test_module_size.py)."""

from __future__ import annotations

import pytest

from tests.support import import_graph


def test_no_module_imports_a_layer_above_its_own():
    upward = [f"{e.source}:{e.line} imports {e.target}" for e in import_graph.edges() if e.upward]
    assert upward == []


def test_the_graph_sees_the_imports_that_matter():
    # The handlers reach the routes, the routes the domain, the domain the adapters: a graph that found
    # none of these would pass the test above for the wrong reason.
    pairs = {(import_graph.layer_of(e.source), import_graph.layer_of(e.target)) for e in import_graph.edges()}
    assert {("functions", "api"), ("api", "domain"), ("domain", "adapters"), ("adapters", "base")} <= pairs


@pytest.mark.parametrize(
    ("source", "code", "upward"),
    [
        ("memmy_kb.adapters.s3", "from memmy_kb.domain import access", True),
        ("memmy_kb.domain.files", "import memmy_kb.api.models", True),
        ("memmy_kb.errors", "from memmy_kb.adapters.errors import ItemMissing", True),
        ("memmy_kb.domain.files", "def f():\n    from memmy_kb.api.resolver import new_router\n", True),
        ("memmy_kb.api.routes.files", "from memmy_kb.domain import files", False),
        ("memmy_kb.domain.files", "from memmy_kb.records import FileRecord", False),
    ],
)
def test_an_import_is_judged_by_the_layers_of_both_ends(source, code, upward):
    (edge,) = import_graph.imports_of(code, source)
    assert edge.upward is upward


def test_every_core_module_belongs_to_a_layer():
    for module, _ in import_graph.modules():
        assert import_graph.layer_of(module) in import_graph.LAYERS


def test_a_module_outside_the_layers_is_refused():
    with pytest.raises(ValueError, match="no layer"):
        import_graph.layer_of("memmy_kb.helpers")
