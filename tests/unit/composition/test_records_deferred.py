"""The stored records' validators are built when a record type is first used, not when ``memmy_kb.records``
is imported: every handler imports the module and uses a few of its records (recall: grants and KB names).
Checked in a fresh interpreter, where no other test has used a record yet."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

LAYER = Path(__file__).resolve().parents[3] / "layers" / "core" / "python"

_REPORT = """
import json, pydantic
import memmy_kb.records as records
models = [v for v in vars(records).values()
          if isinstance(v, type) and issubclass(v, pydantic.BaseModel) and v.__module__ == records.__name__]
built = sorted(m.__name__ for m in models if m.__pydantic_complete__)
grant = records.GrantRecord(user_id="u", kb_id="kb_1", role="owner", recall=True, memos_kb_id="m",
                            owner_id="u", granted_at="2026-01-01T00:00:00+00:00")
print(json.dumps({"models": len(models), "built_at_import": built,
                  "grant_built": records.GrantRecord.__pydantic_complete__, "tz": str(grant.granted_at.tzinfo)}))
"""


def _report() -> dict[str, object]:
    found = subprocess.run(  # noqa: S603 - our own snippet, run by this interpreter
        [sys.executable, "-c", _REPORT],
        check=True,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(LAYER)},
    )
    return json.loads(found.stdout)


def test_no_record_validator_is_built_at_import() -> None:
    report = _report()
    assert report["models"] > 10
    assert report["built_at_import"] == []


def test_a_record_still_validates_on_first_use() -> None:
    report = _report()
    assert report["grant_built"] is True
    assert report["tz"] == "UTC"
