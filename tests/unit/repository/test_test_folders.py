"""The unit and integration tiers are grouped by feature: every test module sits in a sub-folder of its
tier (tests/unit/domain/, tests/integration/recall/, ...), never directly in the tier's folder, and every
folder that holds test modules is a package (an ``__init__.py``), so that two modules of one name in two
folders (tests/unit/domain/deletion/test_deletion.py, tests/integration/deletion/test_deletion.py) both import.

tests/unit/domain/ is grouped one level further, as the domain is: its test modules sit in sub-folders named
as the domain's packages (tests/unit/domain/recall/, ...), or in tests/unit/domain/common/ for the modules
directly in ``domain/`` that every feature shares, never directly in tests/unit/domain/.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
TIERS = ("unit", "integration")
DOMAIN = ROOT / "layers" / "core" / "python" / "memmy_kb" / "domain"
# The folder of the tests of the modules directly in domain/ (access.py, directory.py, storage.py...).
COMMON = "common"


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


def _domain_misplaced(tests: Path, domain: Path) -> list[str]:
    """Test modules of tests/unit/domain/ not in a sub-folder named as a package of ``domain`` (or
    ``common``): directly in tests/unit/domain/, or in a folder the domain has no package for."""
    packages = {path.parent.name for path in domain.glob("*/__init__.py")} | {COMMON}
    folder = tests / "unit" / "domain"
    return sorted(
        path.relative_to(tests.parent).as_posix()
        for path in folder.rglob("test_*.py")
        if path.relative_to(folder).parts[0] not in packages
    )


def test_no_test_module_sits_directly_in_a_tiers_folder():
    assert _flat(ROOT / "tests") == []


def test_the_domains_test_modules_sit_in_folders_named_as_its_packages():
    assert _domain_misplaced(ROOT / "tests", DOMAIN) == []


def test_every_folder_of_test_modules_is_a_package():
    assert _not_packages(ROOT / "tests") == []


def test_the_tiers_have_their_test_modules_in_sub_folders():
    # A glob that found nothing would pass the rules for the wrong reason.
    for tier in TIERS:
        assert list((ROOT / "tests" / tier).glob("*/test_*.py")), (
            f"no test module in a sub-folder of tests/{tier}"
        )
    assert list((ROOT / "tests" / "unit" / "domain").glob("*/test_*.py"))
    assert (DOMAIN / "recall" / "__init__.py").is_file()


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


def test_the_domain_rule_sees_a_module_directly_in_tests_unit_domain(tmp_path):
    domain = tmp_path / "domain"
    for package in ("recall", "uploads"):
        (domain / package).mkdir(parents=True)
        (domain / package / "__init__.py").write_text("")
    (domain / "access.py").write_text("")
    tests = tmp_path / "tests"
    for folder in ("unit/domain/recall", "unit/domain/common"):
        (tests / folder).mkdir(parents=True)
        (tests / folder / "test_grouped.py").write_text("")
    (tests / "unit" / "domain" / "conftest.py").write_text("")  # fixtures for every folder may sit there
    assert _domain_misplaced(tests, domain) == []

    (tests / "unit" / "domain" / "test_flat.py").write_text("")
    (tests / "unit" / "domain" / "sharing").mkdir()
    (tests / "unit" / "domain" / "sharing" / "test_unknown.py").write_text("")
    assert _domain_misplaced(tests, domain) == [
        "tests/unit/domain/sharing/test_unknown.py",
        "tests/unit/domain/test_flat.py",
    ]
