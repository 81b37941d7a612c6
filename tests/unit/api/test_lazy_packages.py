"""Powertools' event handler and event classes, imported module by module on first use
(``memmy_kb.api.lazy_packages``): the names their packages export all still import, each with only its own
module, and the whole ``__init__`` runs when something asks for a name it alone defines.

Each case runs in a fresh interpreter: in this one, Powertools is already imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from memmy_kb.api.lazy_packages import _reexports

REPO_ROOT = Path(__file__).resolve().parents[3]
LAYER = REPO_ROOT / "layers" / "core" / "python"

_PREAMBLE = """
import importlib.util, json, sys
spec = importlib.util.spec_from_file_location("lazy_packages", sys.argv[1])
lazy_packages = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lazy_packages)
"""


def _fresh(code: str, *, install: bool = True) -> dict[str, object]:
    """What ``code`` prints as JSON, run after ``install()`` (unless not ``install``) in a fresh interpreter.

    The module is loaded from its file: importing ``memmy_kb.api`` would install the packages first.
    """
    script = _PREAMBLE + ("lazy_packages.install()\n" if install else "") + code
    module = LAYER / "memmy_kb" / "api" / "lazy_packages.py"
    done = subprocess.run(  # noqa: S603 - our own snippet, run by this interpreter
        [sys.executable, "-c", script, str(module)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_api_resolver_comes_without_appsync_asyncio_or_the_other_event_classes():
    report = _fresh(
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types\n"
        "from aws_lambda_powertools.event_handler.openapi.params import Body\n"
        "app = APIGatewayHttpResolver(enable_validation=True)\n"
        "print(json.dumps({'loaded': sorted(sys.modules), 'json': content_types.APPLICATION_JSON,"
        " 'response': Response.__module__}))"
    )
    loaded = set(report["loaded"])  # type: ignore[arg-type]
    assert "asyncio" not in loaded
    assert "aws_lambda_powertools.event_handler.appsync" not in loaded
    assert "aws_lambda_powertools.utilities.data_classes.code_pipeline_job_event" not in loaded
    # What it does import: the resolver's module and the HTTP API's event class.
    assert {
        "aws_lambda_powertools.event_handler.api_gateway",
        "aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event",
    } <= loaded
    assert report["json"] == "application/json"
    assert report["response"] == "aws_lambda_powertools.event_handler.api_gateway"


_EXPORTS = """
import aws_lambda_powertools.event_handler as handler
names = {name: [getattr(handler, name).__module__, getattr(handler, name).__qualname__] for name in NAMES}
print(json.dumps({"names": names, "init_ran": "__all__" in vars(handler)}))
"""


def test_each_exported_name_is_the_packages_own_without_running_its_init():
    real = _fresh("import aws_lambda_powertools.event_handler as h\nprint(json.dumps(h.__all__))", install=False)
    code = f"NAMES = {real!r}\n{_EXPORTS}"
    # Given the names the package's __all__ lists, read one by one from the real package and the lazy one
    plain, lazy = _fresh(code, install=False), _fresh(code)
    # Then each is the same class or function, and the lazy package never ran its whole __init__ for them
    assert lazy["names"] == plain["names"]
    assert len(lazy["names"]) == len(real) > 10  # type: ignore[arg-type]
    assert lazy["init_ran"] is False


def test_a_name_only_the_package_defines_runs_its_whole_init_once():
    report = _fresh(
        "import aws_lambda_powertools.event_handler as handler\n"
        "from aws_lambda_powertools.event_handler import *\n"
        "print(json.dumps({'all': handler.__all__, 'asyncio': 'asyncio' in sys.modules,"
        " 'star': 'VPCLatticeV2Resolver' in globals()}))"
    )
    assert report["asyncio"] is True  # AppSync's resolver, imported by the whole __init__
    assert report["star"] is True
    assert "AppSyncResolver" in report["all"]  # type: ignore[operator]


def test_every_event_class_the_package_exports_still_imports():
    report = _fresh(
        "import aws_lambda_powertools.utilities.data_classes as classes\n"
        "from aws_lambda_powertools.utilities.data_classes import SQSEvent, event_source\n"
        "print(json.dumps({'sqs': SQSEvent.__module__, 'source': event_source.__module__,"
        " 'all': sorted(n for n in classes.__all__ if getattr(classes, n) is None)}))"
    )
    assert report["sqs"] == "aws_lambda_powertools.utilities.data_classes.sqs_event"
    assert report["source"] == "aws_lambda_powertools.utilities.data_classes.event_source"
    assert report["all"] == []


def test_an_unknown_name_is_an_attribute_error_as_from_any_module():
    report = _fresh(
        "import aws_lambda_powertools.event_handler as handler\n"
        "try:\n    handler.NoSuchResolver\nexcept AttributeError as err:\n    print(json.dumps({'error': str(err)}))"
    )
    assert "NoSuchResolver" in str(report["error"])


def test_a_package_imported_before_is_left_as_it_is():
    report = _fresh(
        "import aws_lambda_powertools.event_handler as before\n"
        "lazy_packages.install()\n"
        "after = sys.modules['aws_lambda_powertools.event_handler']\n"
        "print(json.dumps({'same': after is before, 'lazy': '__getattr__' in vars(after)}))",
        install=False,
    )
    assert report == {"same": True, "lazy": False}


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("from .alb_event import ALBEvent", {"ALBEvent": "pkg.alb_event"}),
        ("from pkg.api import A, B as C", {"A": "pkg.api", "C": "pkg.api"}),
        ('"""doc"""\nimport os\nfrom . import sub\nfrom .x import *', {}),
    ],
)
def test_the_reexports_are_read_from_the_inits_own_imports(source, expected):
    assert _reexports("pkg", source) == expected

