"""meta.json, the record of a sweep: which commits computed its rows, the package versions, the time of
day, and :func:`read_meta`, the one reader of the file (``cbalab paper`` reads every experiment's through it)."""

from __future__ import annotations

import importlib.metadata
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from cbalab.experiments.errors import ExperimentError
from cbalab.models.files import loads_json, unreadable

#: Packages whose versions meta.json records.
PACKAGES = ("numpy", "pandas", "pyomo", "highspy", "networkx", "matplotlib", "tqdm", "dask", "distributed")


def rows_commits(sessions: list[dict]) -> list[dict]:
    """The commits that computed rows (sessions with ``done`` > 0), each once, oldest first: what meta.json's
    ``rows_commits`` names, so that a resume that did nothing does not pass for the rows' commit."""
    out: list[dict] = []
    for x in sessions:
        git = x.get("git")
        if (x.get("done") or 0) > 0 and isinstance(git, dict) and git not in out:
            out.append(git)
    return out


#: The schema of every meta.json the runner writes (experiments/runner.py).
SCHEMA = "cbalab/experiment@1"

#: The keys a meta.json must have to be one: those its readers take the sweep's settings and counts from
#: (``config``: quick, seed; ``runs``), written by every version of the runner.
REQUIRED = ("config", "runs")


def read_meta(path: str | Path) -> dict | None:
    """The meta.json at ``path`` (None when there is none), checked to be one: ExperimentError naming the
    file, and the key at fault, otherwise (exit 2).

    A meta.json is a JSON object with the keys of :data:`REQUIRED` and, when it names a schema, :data:`SCHEMA`:
    one without them would pass every check of what it does not say (``--verify`` took a missing ``config`` for
    full rows, a resumed sweep kept ``{}``).  The fields that readers use must have their types: ``config`` and
    ``runs`` objects, ``sessions`` a list of objects, ``git`` an object or null, ``wall_seconds`` a number or
    null.  ``cbalab paper`` checks every experiment's meta.json through here before it reads any.
    """
    p = Path(path)
    if not p.exists():
        return None
    try:
        doc = loads_json(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ExperimentError(f"{p}: {unreadable(e)}") from None
    except ValueError as e:
        raise ExperimentError(f"{p}: not JSON ({e}); rerun the experiment or remove the file") from None
    if not isinstance(doc, dict):
        raise ExperimentError(f"{p}: holds {type(doc).__name__}, not a meta.json object; rerun the experiment")
    if doc.get("schema", SCHEMA) != SCHEMA:
        raise ExperimentError(f"{p}: 'schema' is {doc['schema']!r}, not {SCHEMA!r}; not a meta.json of cbalab")
    for key in REQUIRED:
        if key not in doc:
            raise ExperimentError(f"{p}: has no {key!r}; not a whole meta.json (rerun the experiment)")
    checks = (
        ("config", dict, False),
        ("sessions", list, False),
        ("git", dict, True),
        ("wall_seconds", int | float, True),
        ("runs", dict, False),
    )
    for key, kind, nullable in checks:
        if key in doc and not (isinstance(doc[key], kind) or (nullable and doc[key] is None)):
            raise ExperimentError(f"{p}: {key!r} holds {type(doc[key]).__name__}; rerun the experiment")
    if not all(isinstance(x, dict) for x in doc.get("sessions", [])):
        raise ExperimentError(f"{p}: 'sessions' holds an entry that is not an object; rerun the experiment")
    return doc


def earlier_sessions(path: Path) -> list[dict]:
    """The earlier invocations recorded in an existing meta.json (a resumed sweep keeps its history)."""
    old = read_meta(path)
    if old is None:
        return []
    if "sessions" in old:
        return list(old["sessions"])
    keys = ("started", "ended", "wall_seconds", "git")
    if not all(k in old for k in keys):
        return []
    done = old["runs"].get("done_now")
    return [{k: old[k] for k in keys} | {"done": done, "workers": old["config"].get("workers")}]


def now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def versions(packages: tuple[str, ...] = PACKAGES) -> dict[str, str | None]:
    """Installed versions of ``packages`` (:data:`PACKAGES` by default; None when one is missing)."""
    out: dict[str, str | None] = {}
    for pkg in packages:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def git_commit() -> dict[str, Any] | None:
    """The git commit (and whether the work tree has changes) of the checkout cbalab runs from, if it is one.

    Changes under paper/ (the results, the paper's sources) do not count: they are what runs write, not what
    they execute, so a sweep or a ``--verify --record`` into paper/results leaves the next one clean."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", ".", ":(exclude)paper"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}
