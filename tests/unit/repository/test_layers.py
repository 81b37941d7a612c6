"""The core's layers hold: imports only go down, the adapters see only the domain's vocabulary, every module
has a layer; no module of the repository is part of an import loop; and no test module imports another,
what tests share being in tests/support (the size caps: test_module_size.py)."""

from __future__ import annotations

import ast

import pytest

from tests.support import import_graph


def test_no_module_imports_a_layer_above_its_own():
    upward = [f"{e.source}:{e.line} imports {e.target}" for e in import_graph.edges() if e.upward]
    assert upward == []


def test_the_domain_imports_no_adapter_at_all():
    # Module level, in functions and under TYPE_CHECKING alike: the rules type-check without AWS or MemOS.
    into_adapters = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in import_graph.edges()
        if import_graph.layer_of(e.source) == "domain" and import_graph.layer_of(e.target) == "adapters"
    ]
    assert into_adapters == []


def test_the_adapters_import_only_the_domains_vocabulary():
    rules = [f"{e.source}:{e.line} imports {e.target}" for e in import_graph.edges() if e.into_domain_rules]
    assert rules == []


def test_the_graph_sees_the_imports_that_matter():
    # The handlers reach the routes, the routes the domain and the composition root, which reaches the
    # adapters, the adapters the domain's
    # storage and engine types (the ports they implement structurally), the domain the base: a graph that
    # found none of these would pass the tests above for the wrong reason.
    found = import_graph.edges()
    pairs = {(import_graph.layer_of(e.source), import_graph.layer_of(e.target)) for e in found}
    expected = {
        ("functions", "api"),
        ("api", "domain"),
        ("api", "composition"),
        ("composition", "adapters"),
        ("adapters", "domain"),
        ("domain", "base"),
    }
    assert expected <= pairs
    from_adapters = {e.target for e in found if import_graph.layer_of(e.source) == "adapters"}
    assert {"memmy_kb.domain.storage", "memmy_kb.domain.engine"} <= from_adapters


@pytest.mark.parametrize(
    ("source", "code", "upward"),
    [
        ("memmy_kb.domain.knowledge_bases.files", "from memmy_kb.adapters.s3 import UploadStorage", True),
        ("memmy_kb.domain.knowledge_bases.files", "import memmy_kb.api.models", True),
        ("memmy_kb.errors", "from memmy_kb.domain.storage import ItemMissing", True),
        ("memmy_kb.invocation_deadline", "from memmy_kb.domain.engine import MemosError", True),
        ("memmy_kb.domain.knowledge_bases.files", "def f():\n    from memmy_kb.api.resolver import new_router\n", True),
        ("memmy_kb.domain.knowledge_bases.files", "def f():\n    from memmy_kb.adapters.memos import client\n", True),
        (
            "memmy_kb.domain.ports",
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from memmy_kb.adapters.s3 import ObjectInfo\n",
            True,
        ),
        ("memmy_kb.adapters.s3", "from memmy_kb.domain.storage import ObjectInfo", False),
        ("memmy_kb.api.routes.files", "from memmy_kb.domain import files", False),
        ("memmy_kb.domain.knowledge_bases.files", "from memmy_kb.records import FileRecord", False),
        ("memmy_kb.adapters.memos.client", "from memmy_kb.invocation_deadline import seconds_left", False),
    ],
)
def test_an_import_is_judged_by_the_layers_of_both_ends(source, code, upward):
    # Only the ``memmy_kb`` import is an edge (the TYPE_CHECKING case also imports ``typing``).
    (edge,) = import_graph.imports_of(code, source)
    assert edge.upward is upward
    assert edge.forbidden is upward


@pytest.mark.parametrize(
    ("code", "allowed"),
    [
        ("from memmy_kb.domain.ports.contents import ContentStore", True),
        ("from memmy_kb.domain.ports import knowledge_bases", True),
        ("from memmy_kb.domain.storage import ConditionFailed", True),
        ("from memmy_kb.domain.engine import FileStatus", True),
        ("from memmy_kb.domain import ports", True),
        ("from memmy_kb.domain import sharing", False),
        ("from memmy_kb.domain.sharing.shares import share_knowledge_base", False),
        ("import memmy_kb.domain.access", False),
        ("import memmy_kb.domain", False),
        ("def f():\n    from memmy_kb.domain.recall.turn import recall\n", False),
    ],
)
def test_an_adapter_may_import_the_domains_vocabulary_but_not_its_rules(code, allowed):
    (edge,) = import_graph.imports_of(code, "memmy_kb.adapters.dynamodb.contents")
    assert not edge.upward
    assert edge.into_domain_rules is not allowed
    assert edge.forbidden is not allowed


def test_every_core_module_belongs_to_a_layer():
    for module, _ in import_graph.modules():
        assert import_graph.layer_of(module) in import_graph.LAYERS


def test_a_module_of_a_domain_package_is_of_the_domain():
    assert import_graph.layer_of("memmy_kb.domain.recall.turn") == "domain"
    assert import_graph.layer_of("memmy_kb.domain.ports.contents") == "domain"
    assert import_graph.domain_part("memmy_kb.domain.recall.turn") == "recall"
    assert import_graph.domain_part("memmy_kb.domain.access") == "shared"


def test_directly_in_the_domain_sit_only_the_modules_every_feature_shares():
    # A rule lives in its feature's package (docs/architecture.md, "Module map"); a module added directly
    # to domain/ is either shared by every feature (then it joins DOMAIN_SHARED and the map) or misplaced.
    top = {path.stem for path in import_graph.DOMAIN.glob("*.py") if path.stem != "__init__"}
    assert top == import_graph.DOMAIN_SHARED


def test_every_folder_of_the_domain_is_a_package_one_level_deep():
    folders = [path for path in import_graph.DOMAIN.iterdir() if path.is_dir() and path.name != "__pycache__"]
    assert {path.name for path in folders} >= {"recall", "uploads", "ports"}
    assert [path.name for path in folders if not (path / "__init__.py").is_file()] == []
    nested = [
        str(path.relative_to(import_graph.DOMAIN))
        for folder in folders
        for path in folder.iterdir()
        if path.is_dir() and path.name != "__pycache__"
    ]
    assert nested == []


def test_the_domains_package_files_import_nothing():
    # Importing memmy_kb.domain.recall.turn must not load the other recall modules (the recall handler
    # imports only what it uses): every __init__ of the domain is a docstring at most.
    statements = {
        str(path.relative_to(import_graph.DOMAIN)): [
            type(node).__name__
            for node in ast.parse(path.read_text()).body
            if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))  # the docstring
        ]
        for path in import_graph.DOMAIN.rglob("__init__.py")
    }
    assert len(statements) > 5, "the domain's packages were not found"
    assert {name: found for name, found in statements.items() if found} == {}


def test_the_shared_modules_import_no_feature():
    # What every feature shares may not depend on one of them (the ports are types, shared alike).
    into_features = [
        f"{e.source}:{e.line} imports {e.target}"
        for e in import_graph.edges()
        if import_graph.layer_of(e.source) == "domain"
        and import_graph.domain_part(e.source) in ("shared", "ports")
        and import_graph.layer_of(e.target) == "domain"
        and import_graph.domain_part(e.target) not in ("shared", "ports")
    ]
    assert into_features == []


def test_the_domains_feature_packages_import_each_other_without_a_loop():
    # Features build on each other in one direction (knowledge_bases below sharing, uploads, recall...);
    # a loop between two packages means a module sits in the wrong one.
    graph = import_graph.feature_edges()
    assert {"recall", "uploads", "knowledge_bases", "shared"} <= set(graph)
    assert any(graph.values()), "no import between the domain's parts: the graph is wrong"
    assert [import_graph._name_cycle(graph, loop) for loop in import_graph._loops(graph)] == []


def test_a_module_outside_the_layers_is_refused():
    with pytest.raises(ValueError, match="no layer"):
        import_graph.layer_of("memmy_kb.helpers")


def test_the_domain_imports_no_aws_sdk_or_http_client():
    # The adapters translate AWS and MemOS failures into the domain's errors; the rules never see boto3.
    foreign = [f"{f.source}:{f.line} imports {f.target}" for f in import_graph.domain_foreign_imports()]
    assert foreign == []


@pytest.mark.parametrize(
    ("code", "forbidden"),
    [
        ("from botocore.exceptions import BotoCoreError, ClientError", ["botocore.exceptions.BotoCoreError", "botocore.exceptions.ClientError"]),
        ("import boto3", ["boto3"]),
        ("import botocore.exceptions as aws", ["botocore.exceptions"]),
        ("import httpx", ["httpx"]),
        ("from boto3.dynamodb.types import TypeSerializer", ["boto3.dynamodb.types.TypeSerializer"]),
        ("from mypy_boto3_s3 import S3Client", ["mypy_boto3_s3.S3Client"]),
        ("from aws_lambda_powertools.utilities import parameters", ["aws_lambda_powertools.utilities.parameters"]),
        ("from aws_lambda_powertools import Tracer", ["aws_lambda_powertools.Tracer"]),
        (
            "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from botocore.client import BaseClient\n",
            ["botocore.client.BaseClient"],
        ),
        ("def f():\n    import boto3\n", ["boto3"]),
        ("import importlib\n\nboto3 = importlib.import_module('boto3')\n", ["boto3"]),
        ("botocore = __import__('botocore.exceptions')\n", ["botocore.exceptions"]),
        ("from aws_lambda_powertools import Logger", []),
        ("import re\nfrom collections.abc import Iterator\nfrom xml.parsers import expat", []),
        ("from pydantic import BaseModel\nimport phonenumbers", []),
        ("from memmy_kb.domain.storage import StoreUnavailable", []),
    ],
)
def test_a_domain_import_of_an_sdk_or_http_client_is_found_in_any_form(code, forbidden):
    found = [f.target for f in import_graph.foreign_imports(code, "memmy_kb.domain.deletion.cleanup")]
    assert found == forbidden



def test_no_module_of_the_repository_is_part_of_an_import_loop():
    # The core, the handlers, the client, the local stack, bench/ and tests/; an import in a function or
    # under TYPE_CHECKING counts: a loop there is a loop waiting for the import to move.
    assert import_graph.import_loops() == []


def test_the_loop_finder_reads_every_part_of_the_repository():
    # A finder that read no module, or resolved no import, would find no loop for the wrong reason.
    sources = import_graph.repository_sources()
    assert {name.split(".")[0] for name in sources} == {
        "memmy_kb", "memmy_kb_client", "memmy_local", "bench", "tests", "functions",
    }  # fmt: skip
    edges = {
        (edge.source, edge.target)
        for name, source in sources.items()
        for edge in import_graph.module_edges(name, source, sources)
    }
    assert {
        ("functions.recall.app", "memmy_kb.api.routes.recall"),
        ("memmy_kb_client.cli.main", "memmy_local.cli"),  # importlib.import_module of a literal name
        ("memmy_local.identity.provider", "memmy_local.identity.pages"),  # from . import pages
        ("memmy_local.identity.grants", "memmy_local.identity.issuer"),  # from .issuer import ...
        ("memmy_local.stack", "memmy_local.gateway.server"),  # in a function
        ("tests.support.aws", "memmy_local.provision.resources"),
        ("bench.__main__", "bench.cost_model"),
    } <= edges


def _loops(modules: dict[str, str]) -> list[str]:
    """The loops among small made-up modules, ``name: source`` (``pkg.__init__`` is the package ``pkg``)."""
    sources = {
        name.removesuffix(".__init__"): import_graph.Source(text, is_package=name.endswith(".__init__"))
        for name, text in modules.items()
    }
    return import_graph.import_loops(sources)


@pytest.mark.parametrize(
    ("modules", "loops"),
    [
        ({"pkg.a": "from pkg.b import x", "pkg.b": "import pkg.a"}, ["pkg.a:1 -> pkg.b:1 -> pkg.a"]),
        (
            {
                "pkg.grants": "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from .provider import P\n",
                "pkg.provider": "from .grants import Grant\n",
            },
            ["pkg.grants:4 -> pkg.provider:1 -> pkg.grants"],
        ),
        (
            {"pkg.a": "def f():\n    from pkg import b\n", "pkg.b": "from pkg.a import f"},
            ["pkg.a:2 -> pkg.b:1 -> pkg.a"],
        ),
        ({"pkg.__init__": "from .sub import x", "pkg.sub": "from pkg import y"}, ["pkg:1 -> pkg.sub:1 -> pkg"]),
        ({"a": "import b", "b": "import c", "c": "import a"}, ["a:1 -> b:1 -> c:1 -> a"]),
        ({"a": "import importlib\n\nimportlib.import_module('b')", "b": "import a"}, ["a:3 -> b:1 -> a"]),
        (
            {"server": "from endpoints import Api\nfrom worker import Worker", "endpoints": "from server import Config", "worker": "from server import Config"},
            ["endpoints:1 -> server:1 -> endpoints (in one loop with worker)"],
        ),
        ({"a": "import b\nimport os.path", "b": "import c\nfrom json import loads", "c": ""}, []),
        ({"pkg.__init__": "", "pkg.a": "from . import b", "pkg.b": "from pkg import c", "pkg.c": ""}, []),
        ({"pkg.a": "from pkg.shared import Config", "pkg.b": "from pkg.shared import Config\nimport pkg.a", "pkg.shared": ""}, []),
    ],
)
def test_an_import_loop_is_found_in_any_form_and_named_by_its_cycle(modules, loops):
    assert _loops(modules) == loops


def test_no_test_module_imports_another_or_a_helper_beside_one():
    assert import_graph.imports_of_test_code() == []


@pytest.mark.parametrize(
    ("modules", "found"),
    [
        (
            {"tests.unit.a.test_x": "from tests.unit.b.test_y import helper", "tests.unit.b.test_y": ""},
            ["tests.unit.a.test_x:1 imports tests.unit.b.test_y"],
        ),
        (
            {"tests.e2e.test_x": "def f():\n    from tests.integration import test_y\n", "tests.integration.test_y": ""},
            ["tests.e2e.test_x:2 imports tests.integration.test_y"],
        ),
        ({"tests.e2e.pages": "", "tests.e2e.test_x": "from tests.e2e.pages import browser"}, ["tests.e2e.test_x:1 imports tests.e2e.pages"]),
        (
            {
                "tests.support.__init__": "",
                "tests.support.fakes.__init__": "from tests.support.fakes.table import FakeTable",
                "tests.support.fakes.table": "",
                "tests.unit.test_x": "from tests.support.fakes import FakeTable\nfrom tests.support import fakes",
                "tests.support.recall": "from tests.support.fakes import FakeTable",
            },
            [],
        ),
    ],
)
def test_an_import_of_test_code_outside_tests_support_is_found(modules, found):
    sources = {
        name.removesuffix(".__init__"): import_graph.Source(text, is_package=name.endswith(".__init__"))
        for name, text in modules.items()
    }
    assert import_graph.imports_of_test_code(sources) == found
