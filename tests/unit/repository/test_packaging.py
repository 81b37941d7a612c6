"""The two distributions' setuptools configuration: every importable folder of a listed package is listed
too, so the install has nothing to warn about (setuptools warns, at length, about an importable folder
left out of `packages`, as client's desktop/static once was), and the page's files ship with it."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[3]


def _config(project: Path) -> tuple[list[str], dict[str, str]]:
    setuptools = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    return setuptools["packages"], setuptools.get("package-dir", {})


def _folder(project: Path, package: str, package_dir: dict[str, str]) -> Path:
    top, _, rest = package.partition(".")
    base = project / package_dir.get(top, top)
    return base.joinpath(*rest.split(".")) if rest else base


@pytest.mark.parametrize("project", [REPO_ROOT / "client", REPO_ROOT], ids=["client", "root"])
def test_every_importable_folder_under_a_package_is_listed(project: Path) -> None:
    packages, package_dir = _config(project)
    for package in packages:
        for child in _folder(project, package, package_dir).iterdir():
            if child.is_dir() and child.name.isidentifier() and child.name != "__pycache__":
                assert f"{package}.{child.name}" in packages, f"{child} is importable but not in packages"


def test_the_page_ships_with_the_client() -> None:
    setuptools = tomllib.loads((REPO_ROOT / "client" / "pyproject.toml").read_text(encoding="utf-8"))
    globs = setuptools["tool"]["setuptools"]["package-data"]["memmy_kb_client.desktop.static"]
    static = REPO_ROOT / "client" / "memmy_kb_client" / "desktop" / "static"
    shipped = {path for pattern in globs for path in static.glob(pattern)}
    assert {path for path in static.iterdir() if path.is_file()} <= shipped
    assert static / "index.html" in shipped
