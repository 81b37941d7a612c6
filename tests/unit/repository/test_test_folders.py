"""The unit and integration tiers are grouped by feature: every test module sits in a sub-folder of its
tier (tests/unit/domain/, tests/integration/recall/, ...), never directly in the tier's folder, and every
folder that holds test modules is a package (an ``__init__.py``), so that two modules of one name in two
folders (tests/unit/domain/test_deletion.py, tests/integration/deletion/test_deletion.py) both import.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TIERS = ("unit", "integration")


def _flat(tests: Path) -> list[str]:
    """Test modules directly in a tier's folder rather than in one of its sub-folders."""
    return sorted(
        path.relative_to(tests.parent).as_posix()
        for tier in TIERS
        for path in (tests / tier).glob("test_*.py")
    )


def _not_packages(tests: Path) -> list[str]:
    """Folders of a tier that hold test modules but no ``__init__.py``."""
    folders = {path.parent for tier in TIERS for path in (tests / tier).rglob("test_*.py")}
    return sorted(
        folder.relative_to(tests.parent).as_posix()
        for folder in folders
        if not (folder / "__init__.py").is_file()
    )


def test_no_test_module_sits_directly_in_a_tiers_folder():
    assert _flat(ROOT / "tests") == []


def test_every_folder_of_test_modules_is_a_package():
    assert _not_packages(ROOT / "tests") == []


def test_the_tiers_have_their_test_modules_in_sub_folders():
    # A glob that found nothing would pass the rules for the wrong reason.
    for tier in TIERS:
        assert list((ROOT / "tests" / tier).glob("*/test_*.py")), (
            f"no test module in a sub-folder of tests/{tier}"
        )


def test_the_rules_see_a_flat_module_and_a_folder_without_its_init(tmp_path):
    tests = tmp_path / "tests"
    for folder in ("unit/domain", "integration/recall", "integration/sync"):
        (tests / folder).mkdir(parents=True)
        (tests / folder / "test_grouped.py").write_text("")
    for folder in ("unit", "integration", "unit/domain", "integration/recall"):
        (tests / folder / "__init__.py").write_text("")
    assert _flat(tests) == []
    assert _not_packages(tests) == ["tests/integration/sync"]

    (tests / "integration" / "test_flat.py").write_text("")
    (tests / "unit" / "test_flat.py").write_text("")
    (tests / "integration" / "conftest.py").write_text("")  # fixtures for the whole tier may sit there
    assert _flat(tests) == ["tests/integration/test_flat.py", "tests/unit/test_flat.py"]
