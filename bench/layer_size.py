"""Size of the core layer as deployed: zipped (what Lambda stores) and unzipped (what counts towards its
250 MB limit for a function and its layers).

The layer is built by its own Makefile (``make build-CoreLayer``, as ``sam build`` runs it) for the
deployed platform (arm64) into ``build/layer-size``. When that cannot run here (no Makefile target, no
Python 3.12, no network for the wheels), the bench's own build for this machine
(``build/bench-layer``, from ``bench.import_time``) is measured if present, and otherwise the layer's
source folder; the figure says which.

``python -m bench.layer_size``
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from pathlib import Path
from typing import Any

from bench.import_time import LAYER_SOURCE, make_layer
from memmy_local.lambdas.handlers import repo_root


def _has_build_target(source: Path) -> bool:
    makefile = source / "Makefile"
    return makefile.is_file() and "build-CoreLayer:" in makefile.read_text(encoding="utf-8")


def _build(root: Path) -> tuple[Path | None, str]:
    """The built layer's ``python/`` folder and what it is, or None and why not."""
    source = root / LAYER_SOURCE
    if not _has_build_target(source):
        return None, "the layer has no build-CoreLayer target"
    artifacts = root / "build" / "layer-size"
    done = make_layer(root, artifacts, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        reason = (done.stderr.strip().splitlines() or ["make failed"])[-1]
        return None, f"the arm64 build failed here ({reason})"
    return artifacts / "python", "built for arm64 by make build-CoreLayer"


def _sizes(folder: Path, built: bool) -> tuple[int, int, int]:
    """(unzipped bytes, zipped bytes, files) of ``folder`` packaged as a layer (under ``python/``)."""
    # Everything a built layer holds, its bytecode included (a source folder's stray __pycache__ is not).
    files = [p for p in sorted(folder.rglob("*")) if p.is_file() and (built or "__pycache__" not in p.parts)]
    unzipped = sum(p.stat().st_size for p in files)
    with tempfile.TemporaryDirectory() as scratch:
        archive = Path(scratch) / "layer.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as packed:
            for path in files:
                packed.write(path, Path("python") / path.relative_to(folder))
        zipped = archive.stat().st_size
    return unzipped, zipped, len(files)


def run() -> dict[str, Any]:
    root = repo_root()
    folder, what = _build(root)
    built = True
    if folder is None:
        reason = what
        bench_build = root / "build" / "bench-layer" / "python"
        if bench_build.is_dir():
            folder, what = bench_build, f"the bench's build for this machine ({reason})"
        else:
            folder, what = root / LAYER_SOURCE, f"the SOURCE folder, not a built layer ({reason})"
            built = False
    unzipped, zipped, files = _sizes(folder, built)
    print(
        f"core layer ({what}): {zipped / 1e6:.1f} MB zipped, {unzipped / 1e6:.1f} MB unzipped, {files} files"
    )
    return {"zipped": zipped, "unzipped": unzipped, "files": files, "what": what, "built": built}


if __name__ == "__main__":
    run()
    sys.exit(0)
