"""The core layer as `sam build` makes it: its Makefile run into a temporary ARTIFACTS_DIR.

What Lambda gets: memmy_kb and the pinned packages for arm64, none of the boto3 family (the runtime's
copy must not be shadowed), every module with unchecked-hash bytecode of its own source for Python 3.12
(layers are read-only), the metadata libraries read, and a size that leaves room. The build needs a Python 3.12 (see
the Makefile) and the package index, or pip's cache under build/pip-cache from an earlier run. Without a
Python 3.12 these tests are skipped, with the Makefile's one line on how to get one as the reason.
"""

from __future__ import annotations

import json
import os
import subprocess
import zipfile
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.metadata import Metadata
from packaging.utils import canonicalize_name

REPO_ROOT = Path(__file__).resolve().parents[3]
LAYER_SOURCE = REPO_ROOT / "layers" / "core" / "python"

# The Lambda python3.12 runtime's own packages: never in the layer, always there to import.
RUNTIME_PROVIDED = {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python-dateutil", "six"}
RUNTIME_MODULES = {"boto3", "botocore", "s3transfer", "jmespath", "urllib3", "dateutil", "six"}
# pypdf (the ingest's PDF text, imported by it alone) is 4 MB of the 27 MiB; everything else 23 MiB.
MAX_UNZIPPED_BYTES = 28 * 2**20
# The remote MCP endpoint's own code (its protocol layer, request path and rules) took the zip past 10 MiB.
MAX_ZIPPED_BYTES = 11 * 2**20

# Run by the layer's Python 3.12: every .py must have a .pyc of that version compiled from it, hash-based
# and unchecked (flags 0b01: Python uses it without hashing the source again at each import).
_CHECK_BYTECODE = """
import importlib.util, json, pathlib, sys
problems = []
for source in sorted(pathlib.Path(sys.argv[1]).rglob("*.py")):
    cached = pathlib.Path(importlib.util.cache_from_source(str(source)))
    if not cached.is_file():
        problems.append(f"{source}: no {cached.name}")
        continue
    header = cached.read_bytes()[:16]
    flags = int.from_bytes(header[4:8], "little")
    if header[:4] != importlib.util.MAGIC_NUMBER or flags != 0b01:
        problems.append(f"{source}: {cached.name} is not unchecked-hash bytecode of this Python")
    elif header[8:16] != importlib.util.source_hash(source.read_bytes()):
        problems.append(f"{source}: {cached.name} was compiled from another source")
print(json.dumps({"version": list(sys.version_info[:2]), "problems": problems}))
"""


def _python312() -> str:
    """The Python 3.12 the layer's Makefile compiles with; without one the module is skipped, saying why
    (one line, the Makefile's, which `make test` and `make unit` print first too)."""
    found = subprocess.run(  # noqa: S603 - the layer's own Makefile
        ["make", "-s", "-C", str(LAYER_SOURCE), "print-python"],  # noqa: S607
        check=True,
        capture_output=True,
        text=True,
    )
    if not found.stdout.strip():
        pytest.skip(found.stderr.strip(), allow_module_level=True)
    return found.stdout.strip()


PYTHON312 = _python312()


@pytest.fixture(scope="module")
def layer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    artifacts = tmp_path_factory.mktemp("layer")
    environment = {
        **os.environ,
        "ARTIFACTS_DIR": str(artifacts),
        "PIP_CACHE_DIR": str(REPO_ROOT / "build" / "pip-cache"),
        "PYTHON312": PYTHON312,
    }
    subprocess.run(  # noqa: S603 - the layer's own Makefile
        ["make", "-s", "-C", str(LAYER_SOURCE), "build-CoreLayer"],  # noqa: S607
        check=True,
        env=environment,
    )
    return artifacts / "python"


def _distributions(layer: Path) -> dict[str, Metadata]:
    found = {}
    for path in layer.glob("*.dist-info/METADATA"):
        metadata = Metadata.from_email(path.read_text(encoding="utf-8"), validate=False)
        found[canonicalize_name(metadata.name)] = metadata
    return found


def test_the_layer_holds_memmy_kb_and_the_pins_for_arm64(layer: Path) -> None:
    assert (layer / "memmy_kb" / "__init__.py").is_file()
    assert (layer / "memmy_kb" / "api" / "routes").is_dir()
    # The compiled part of pydantic is the arm64 build Lambda runs.
    assert list(layer.glob("pydantic_core/_pydantic_core.cpython-312-aarch64-linux-gnu.so"))
    pins = {
        line.split("==")[0]: line.split("==")[1]
        for line in (LAYER_SOURCE / "requirements.txt").read_text(encoding="utf-8").split()
        if "==" in line
    }
    shipped = {name: str(metadata.version) for name, metadata in _distributions(layer).items()}
    assert shipped == {canonicalize_name(name): version for name, version in pins.items()}


def test_the_runtime_packages_are_left_to_the_runtime(layer: Path) -> None:
    tops = {p.name.removesuffix(".py") for p in layer.iterdir()}
    assert tops.isdisjoint(RUNTIME_MODULES | {"aws_xray_sdk", "wrapt"})
    assert {"bin", "tests"}.isdisjoint(tops)
    assert not list(layer.glob("*/tests"))


def test_every_requirement_of_what_is_shipped_is_shipped_or_in_the_runtime(layer: Path) -> None:
    # requirements.txt is installed with --no-deps: a dependency missing from it would only fail on Lambda.
    shipped = _distributions(layer)
    lambda_platform = {**default_environment(), "python_version": "3.12", "python_full_version": "3.12.0"}
    lambda_platform |= {"platform_machine": "aarch64", "sys_platform": "linux", "platform_system": "Linux"}
    missing = []
    for name, metadata in shipped.items():
        for requirement in metadata.requires_dist or []:
            if requirement.marker and not requirement.marker.evaluate({**lambda_platform, "extra": ""}):
                continue
            wanted = canonicalize_name(requirement.name)
            if wanted in RUNTIME_PROVIDED:
                continue
            if wanted not in shipped or not requirement.specifier.contains(shipped[wanted].version, prereleases=True):
                missing.append(f"{name} needs {requirement}")
    assert missing == []


def test_the_metadata_libraries_read_is_kept(layer: Path) -> None:
    # pydantic lists the installed distributions (plugins); anything may ask importlib.metadata a version.
    for dist_info in layer.glob("*.dist-info"):
        assert (dist_info / "METADATA").is_file()
        assert not (dist_info / "RECORD").exists()
    assert (layer / "pydantic-2.13.3.dist-info" / "METADATA").is_file()
    assert (layer / "aws_lambda_powertools-3.37.0.dist-info" / "METADATA").is_file()


def test_every_module_has_unchecked_hash_bytecode_of_its_source_for_python_3_12(layer: Path) -> None:
    checked = subprocess.run(  # noqa: S603 - our own script, run by the Python the Makefile found
        [PYTHON312, "-S", "-c", _CHECK_BYTECODE, str(layer)],
        check=True,
        capture_output=True,
        text=True,
    )
    report = json.loads(checked.stdout)
    assert report["version"] == [3, 12]
    assert report["problems"] == []
    assert len(list(layer.rglob("*.py"))) > 1000  # the check saw the whole layer, dependencies included


def test_the_layer_stays_small(layer: Path, tmp_path: Path) -> None:
    unzipped = sum(p.stat().st_size for p in layer.rglob("*") if p.is_file())
    archive = tmp_path / "layer.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        for path in sorted(layer.rglob("*")):
            zipped.write(path, Path("python") / path.relative_to(layer))
    assert unzipped <= MAX_UNZIPPED_BYTES, f"{unzipped:,} bytes unzipped"
    assert archive.stat().st_size <= MAX_ZIPPED_BYTES, f"{archive.stat().st_size:,} bytes zipped"
