"""The one writer of measurement results: a tidy CSV, written atomically, and a small meta JSON beside it.

Every script under experiments/runs/ writes its rows through :func:`write_results`,
so each result file comes with what produced it: the script, its seed (every
random draw of a run derives from it), its arguments, the package versions, the
git commit it ran at (with whether the work tree had changes) and the sha256 of the
CSV.  Both files go through cbalab.models.files (temporary file in the same folder,
then rename), the meta JSON last, so a complete meta file always describes a
complete CSV.
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

import pandas as pd

from cbalab.experiments.meta import git_commit
from cbalab.models.files import atomic_write_csv, atomic_write_json, sha256_file

SCHEMA = "cbalab/run-meta@1"


def meta_path(csv_path: str | Path) -> Path:
    """Where the meta JSON of ``csv_path`` goes: ``NAME.meta.json`` beside ``NAME.csv``."""
    path = Path(csv_path)
    return path.with_name(path.stem + ".meta.json")


def write_results(
    csv_path: str | Path,
    rows: pd.DataFrame,
    *,
    script: str,
    seed: int | None,
    arguments: Mapping[str, Any],
) -> Path:
    """Write ``rows`` (one row per measurement, every parameter a column) to ``csv_path`` with its meta JSON.

    ``seed`` is the run's base seed (None when the run draws nothing at
    random) and ``arguments`` the run's settings (paths become strings,
    infinities and NaN become null so the JSON stays strict).  The folder is
    created if missing.  Returns the CSV's path.
    """
    path = Path(csv_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_csv(path, rows)
    meta = {
        "schema": SCHEMA,
        "script": script,
        "seed": seed,
        "arguments": {str(k): _plain(v) for k, v in arguments.items()},
        "rows": len(rows),
        "columns": [str(c) for c in rows.columns],
        "file": path.name,
        "sha256": sha256_file(path),
        "created_utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": {"python": platform.python_version(), **_versions()},
        "git": git_commit(),
    }
    atomic_write_json(meta_path(path), meta)
    return path


def _versions() -> dict[str, str]:
    """Installed versions of cbalab and the libraries whose numbers a result depends on."""
    out = {}
    for name in ("cbalab", "numpy", "pandas", "highspy", "pyomo"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _plain(value: Any) -> Any:
    """``value`` as strict-JSON data: paths as strings, sequences as lists, non-finite floats as None."""
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return str(value)
