"""One sweep runner for every experiment of cbalab (``cbalab experiment NAME``).

An experiment is a module under ``cbalab.experiments.runs`` that exposes

* ``NAME``: its command-line name;
* ``grid(quick: bool, seed: int) -> list[dict]``: one dict of JSON-able
  parameters per run, each carrying its own seed derived from ``seed``
  (:func:`derive_seed`), so that a run's result depends on its parameters only;
* ``run_one(params: dict) -> dict``: the run's result columns (units in the
  column names, wall times in columns ending ``_seconds``);
* ``figures(runs: pandas.DataFrame, outdir: Path) -> list[Path]``: the figures
  (PDF for the paper, PNG for the README; matplotlib's Agg backend), drawn from
  the successful rows;
* optionally ``tables(runs: pandas.DataFrame) -> dict[str, pandas.DataFrame]``:
  summary tables, each written as ``DIR/NAME/<name>.csv`` and printed;
* optionally ``same_run(params)`` (:func:`shared_runs`) and ``pinned() -> dict``:
  files the rows are judged by, recorded in meta.json as ``pinned`` (the
  confirmation's rules file and its sha256);
* ``PREFIX`` and ``paper_section(res: Results) -> Section``: its section of the
  paper, macros, tables and figures drawn from the committed results, which
  ``cbalab paper`` (experiments/paper/) assembles over :data:`EXPERIMENTS`.

The runner evaluates the grid on local processes (``--workers N``; N = 1 runs
in this process) or on a Dask distributed cluster (``--scheduler
tcp://HOST:PORT``), through one code path (:func:`run_sweep`).  Every run is
keyed by a hash of its parameters (:func:`run_key`) and written atomically as
``DIR/NAME/runs/<key>.json`` the moment it finishes, so that an interruption
leaves only whole runs behind and a rerun with the same ``--out`` does only
what is missing (runs that failed are retried).  ``runs.csv`` is assembled
from the run files in grid order: the same seed gives the same rows whatever
the number of workers or where they run, except for the wall-time columns
(``*_seconds``), which are measurements; compare rows with
:func:`comparable`, which drops them.  A failing run is recorded with its
error (the ``error`` column, empty for a successful run) and does not stop
the sweep.  ``meta.json`` records the configuration, the seed, the cbalab
version, the git commit, the package versions, the machine and the start and
end times; :func:`cbalab.experiments.meta.read_meta` is the one reader of it (``cbalab paper`` too).

The runner shrugs off bad state and refuses bad input before it runs anything:
a run file that cannot be read or does not hold a run of its own parameters
(``[]``, ``null``, no ``"error"``, an empty row, a row that would overwrite a
parameter, a folder in its place) is set aside as ``<key>.json.broken`` and
the run is done again, with a warning; a meta.json that is not one, an
``--out`` that cannot hold the results and a ``--scheduler`` that is no Dask
scheduler (checked within :data:`CONNECT_TIMEOUT_S` seconds) are
ExperimentError naming the file or the option, exit 2.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import json
import math
import os
import platform
import shutil
import sys
import time
import traceback
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from cbalab.experiments.about import ABOUT, console_table
from cbalab.experiments.backends import dask_runs, local_runs, overwritten_parameter, scheduler_address
from cbalab.experiments.errors import ExperimentError
from cbalab.experiments.meta import SCHEMA, earlier_sessions, git_commit, now, rows_commits, versions
from cbalab.experiments.provenance import grid_digest, record
from cbalab.models import __version__
from cbalab.models.files import (
    atomic_write_csv,
    atomic_write_json,
    loads_json,
    sha256_file,
    unreadable,
    unwritable_folder,
)

#: Experiment name -> module that implements it (the registry of ``cbalab experiment --list``).
EXPERIMENTS: dict[str, str] = {
    "io-cost": "cbalab.experiments.runs.io_cost",
    "welfare": "cbalab.experiments.runs.welfare",
    "optimality": "cbalab.experiments.runs.optimality",
    "scaling": "cbalab.experiments.runs.scaling",
    "sensitivity": "cbalab.experiments.runs.sensitivity",
    "dynamic": "cbalab.experiments.runs.dynamic",
    "online-welfare": "cbalab.experiments.runs.online_welfare",
    "confirm": "cbalab.experiments.runs.confirm",
}


#: Exit statuses of ``cbalab experiment`` (docs/interface.md): 0 every run done, 1 a run or a figure failed,
#: 2 bad input (unknown or unavailable experiment, bad option), 130 interrupted.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def derive_seed(seed: int, *parts: object) -> int:
    """A run's own seed in [0, 2^31): a hash of the sweep seed and the run's coordinates.

    Deriving it from the coordinates (not from a counter) keeps a run's seed
    when the grid around it grows or shrinks.
    """
    text = json.dumps([int(seed), *parts], sort_keys=True, default=str)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big") & 0x7FFFFFFF


def run_key(params: dict) -> str:
    """The run's key: 16 hex digits of the sha256 of its parameters as canonical JSON (sorted keys)."""
    text = json.dumps(params, sort_keys=True, allow_nan=False, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def comparable(runs: pd.DataFrame) -> pd.DataFrame:
    """``runs`` without its wall-time columns (``*_seconds``): what must be equal between two sweeps of one seed."""
    return runs[[c for c in runs.columns if not str(c).endswith("_seconds")]]


def load_experiment(name: str) -> ModuleType:
    """The module of experiment ``name``; ExperimentError when the name is unknown or its module is missing."""
    if name not in EXPERIMENTS:
        raise ExperimentError(f"unknown experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    target = EXPERIMENTS[name]
    try:
        module = importlib.import_module(target)
    except ModuleNotFoundError as e:
        if e.name is not None and target.startswith(e.name):
            raise ExperimentError(f"experiment {name!r} is listed but its module {target} is not installed") from None
        raise
    for attr in ("NAME", "grid", "run_one", "figures"):
        if not hasattr(module, attr):
            raise ExperimentError(f"experiment module {target} lacks {attr!r}")
    return module


@dataclass
class Sweep:
    """What one call of :func:`run_sweep` did; ``runs`` is runs.csv's content."""

    name: str
    out: Path
    runs: pd.DataFrame
    done: int = 0
    skipped: int = 0
    failed: int = 0
    interrupted: bool = False
    aborted: str = ""
    figures: list[Path] = field(default_factory=list)
    figure_error: str = ""
    tables: dict[str, pd.DataFrame] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        """0 if every run and every figure succeeded, 130 if interrupted, 1 otherwise."""
        if self.interrupted:
            return EXIT_INTERRUPTED
        return EXIT_FAILED if self.failed or self.figure_error or self.aborted else EXIT_OK


def _record(run_dir: Path, index: int, key: str, params: dict, outcome: dict) -> None:
    """Write one finished run as runs/<key>.json, atomically."""
    row = outcome["row"]
    if row is not None:
        row = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
    doc = {
        "key": key,
        "index": index,
        "params": params,
        "row": row,
        "error": outcome["error"],
        "run_seconds": outcome["run_seconds"],
        "modules": outcome.get("modules"),
        "data": outcome.get("data"),
    }
    atomic_write_json(run_dir / f"{key}.json", _plain(doc))


def _plain(x: Any) -> Any:
    """``x`` with numpy scalars and arrays turned into plain Python (strict JSON: NaN and inf become None)."""
    if isinstance(x, dict):
        return {str(k): _plain(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [_plain(v) for v in x]
    if hasattr(x, "tolist"):
        return _plain(x.tolist())
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x


def _load_run(path: Path, params: dict) -> tuple[dict | None, str]:
    """The run recorded at ``path`` and "" when it is a well-formed run of ``params``; else None and why not.

    Why not is "" when there is nothing to keep and nothing to report (no file), and otherwise what is wrong
    with the file: not readable, not JSON, not an object, no ``"error"`` text, another run's parameters, no
    result columns in a successful run, or a column that would overwrite a parameter.
    """
    if not path.exists():
        return None, ""
    try:
        doc = loads_json(path.read_text(encoding="utf-8"))
    except OSError as e:
        return None, unreadable(e)
    except ValueError as e:
        return None, f"not JSON ({e})"
    if not isinstance(doc, dict):
        return None, f"holds {type(doc).__name__}, not a run object"
    error, row = doc.get("error"), doc.get("row")
    if not isinstance(error, str):
        return None, 'has no "error" text'
    if doc.get("params") != params:
        return None, "holds the parameters of another run"
    if error:
        return (doc, "") if row is None else (None, "records an error and a row")
    if not isinstance(row, dict) or not row:
        return None, "records success but no result column"
    clash = overwritten_parameter(params, row)
    if clash:
        return None, f"its row would overwrite the parameter {clash!r}"
    return doc, ""


def _set_aside(path: Path, why: str, warn: Callable[[str], None]) -> None:
    """Move a malformed run file (or whatever stands in its place) to ``<name>.broken`` and say so."""
    broken = path.with_name(path.name + ".broken")
    if broken.is_dir() and not broken.is_symlink():
        shutil.rmtree(broken)
    else:
        broken.unlink(missing_ok=True)
    os.replace(path, broken)
    warn(f"{path}: {why}; the run is done again (the old content is in {broken.name})")


def _warn(message: str) -> None:
    """The runner's warnings go to stderr, one line each."""
    print(f"cbalab: warning: {message}", file=sys.stderr)


def sweep_params(module: ModuleType, quick: bool, seed: int) -> dict[str, Any]:
    """The parameters a sweep's rows depend on besides code, data and toolchain: its size, its seed and the
    digest of its grid (every run's parameters, :func:`cbalab.experiments.provenance.grid_digest`)."""
    keys = [run_key(p) for p in module.grid(quick, seed)]
    return {"quick": bool(quick), "seed": int(seed), "grid_sha256": grid_digest(keys)}


def sweep_provenance(run_dir: Path, grid: list[dict], params: dict[str, Any]) -> dict[str, Any]:
    """meta.json's ``provenance`` (experiments/provenance.py): the union of the modules and data files that the
    recorded runs of ``grid`` report (from the processes that ran them: with ``--workers 1`` that is the calling
    process, whose other imports and reads then count too), digested as they are now, with ``params``.
    ``complete`` is False when a run file reports neither (written by an older runner): then nothing can be
    told of what its run executed."""
    modules: set[str] = set()
    data: set[str] = set()
    complete = True
    for p in grid:
        path = run_dir / f"{run_key(p)}.json"
        try:
            doc = loads_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("modules"), list):
            complete = False
            continue
        modules.update(str(m) for m in doc["modules"])
        data.update(str(d) for d in doc.get("data") or [])
    return record(modules, data, params) | {"complete": complete}


#: The columns of a row whose run is another's (:func:`shared_runs`): that run's key and why they are the same.
SAME_RUN = ("same_run_as", "same_run_reason")


def shared_runs(module: ModuleType, grid: list[dict]) -> dict[str, tuple[str, str]]:
    """The runs of ``grid`` that are one computation with an earlier run of it: run key -> (that run's key, the
    reason), from the module's optional ``same_run(params) -> (computation, reason) | None``, where runs whose
    ``computation`` (any hashable) is equal compute the same row and ``reason`` says why, in words.

    The first run of the grid with a given computation is run; the later ones are not: each row is that run's
    result under its own parameters (:func:`row_of`), and ``--verify`` recomputes it from its own parameters,
    which checks the declaration (experiments/verify.py).
    """
    same = getattr(module, "same_run", None)
    if same is None:
        return {}
    first: dict[Any, str] = {}
    out = {}
    for params in grid:
        found = same(params)
        if found is None:
            continue
        key = run_key(params)
        computation, reason = found
        if computation in first:
            out[key] = (first[computation], reason)
        else:
            first[computation] = key
    return out


def row_of(
    key: str, params: dict, row: dict | None, error: str, shared: dict[str, tuple[str, str]] | None = None
) -> dict:
    """One row of runs.csv: the run's key and parameters, its result columns as JSON holds them (non-finite
    numbers empty), in a grid with ``shared`` runs (:func:`shared_runs`) its :data:`SAME_RUN` columns ("" for
    a run of its own), then ``error``."""
    out = {"run_key": key, **params, **_plain(row or {})}
    if shared:
        out |= dict(zip(SAME_RUN, shared.get(key, ("", ""))))
    return out | {"error": error}


def assemble(run_dir: Path, grid: list[dict], shared: dict[str, tuple[str, str]] | None = None) -> pd.DataFrame:
    """runs.csv's content: one row per well-formed recorded run of ``grid``, in grid order (others are absent).

    A row is its parameters, then its result columns (which never overwrite a parameter, :func:`_load_run`),
    then, in a grid with ``shared`` runs (:func:`shared_runs`), which run's result it is and why, then ``error``
    ("" for a successful run).
    """
    shared = shared or {}
    by_key = {run_key(p): p for p in grid}
    rows = []
    for params in grid:
        key = run_key(params)
        source = shared.get(key, (key, ""))[0]
        doc, _ = _load_run(run_dir / f"{source}.json", by_key[source])
        if doc is None:
            continue
        rows.append(row_of(key, params, doc["row"], doc["error"], shared))
    frame = pd.DataFrame(rows)
    if "error" in frame:
        frame["error"] = frame["error"].fillna("")
    return frame


def run_sweep(
    name: str,
    out: str | Path = "results",
    *,
    quick: bool = False,
    seed: int = 0,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    module: ModuleType | None = None,
    argv: Iterable[str] | None = None,
    warn: Callable[[str], None] = _warn,
) -> Sweep:
    """Run experiment ``name`` (or ``module``) into ``out/NAME/``: runs/, runs.csv, meta.json, figures, tables.

    Runs already recorded without error under ``out/NAME/runs/`` are skipped; a run file that is not a
    well-formed run of its parameters is set aside and the run done again, with a line to ``warn``.
    KeyboardInterrupt stops the sweep after writing runs.csv and meta.json
    from the runs finished so far (``Sweep.interrupted``).  Before any run:
    ExperimentError (exit 2) for an ``out`` that cannot hold the results, a
    malformed ``scheduler`` address or one that is no Dask scheduler, and a
    meta.json that is not one (:func:`cbalab.experiments.meta.read_meta`).
    """
    mod = module if module is not None else load_experiment(name)
    if workers < 1:
        raise ExperimentError(f"--workers: must be >= 1 (got {workers})")
    if scheduler is not None:
        scheduler_address(scheduler)
    started = now()
    wall = time.perf_counter()
    grid = mod.grid(quick, seed)
    keys = [run_key(p) for p in grid]
    if len(set(keys)) != len(keys):
        raise ExperimentError(f"experiment {name!r}: its grid repeats a parameter set")
    folder = Path(out) / name
    run_dir = folder / "runs"
    _make_folder(Path(out), run_dir)
    sessions = earlier_sessions(folder / "meta.json")
    shared = shared_runs(mod, grid)
    todo = []
    for i, (key, params) in enumerate(zip(keys, grid)):
        if key in shared:
            continue
        doc, why = _load_run(run_dir / f"{key}.json", params)
        if why:
            _set_aside(run_dir / f"{key}.json", why, warn)
        if doc is None or doc["error"]:
            todo.append((i, key, params))
    sweep = Sweep(name, folder, pd.DataFrame(), skipped=len(grid) - len(shared) - len(todo))
    bar = _bar(len(grid), sweep.skipped, name, progress)
    source = dask_runs(mod.__name__, todo, scheduler) if scheduler else local_runs(mod.__name__, todo, workers)
    try:
        for index, key, params, outcome in source:
            _record(run_dir, index, key, params, outcome)
            sweep.done += 1
            sweep.failed += bool(outcome["error"])
            if bar is not None:
                bar.update(1)
                bar.set_postfix(failed=sweep.failed, refresh=False)
    except KeyboardInterrupt:
        sweep.interrupted = True
    except Exception as e:  # the workers' side broke (a dead process, a lost scheduler): keep what is done
        sweep.aborted = f"{type(e).__name__}: {e}"
    finally:
        if bar is not None:
            bar.close()
    sweep.runs = assemble(run_dir, grid, shared)
    atomic_write_csv(folder / "runs.csv", sweep.runs)
    if not sweep.interrupted and not sweep.aborted:
        ok = sweep.runs[sweep.runs["error"] == ""] if "error" in sweep.runs else sweep.runs
        try:
            sweep.figures = [Path(p) for p in mod.figures(ok.reset_index(drop=True), folder)]
            if hasattr(mod, "tables"):
                sweep.tables = mod.tables(ok.reset_index(drop=True))
                for tname, table in sweep.tables.items():
                    atomic_write_csv(folder / f"{tname}.csv", table)
        except Exception as e:  # the runs are safe on disk; the figure step is reported and can be redone
            sweep.figure_error = f"{type(e).__name__}: {e}\n{traceback.format_exc()}"
    meta: dict[str, Any] = {
        "schema": SCHEMA,
        "sessions": sessions,
        "experiment": name,
        "module": mod.__name__,
        "config": {
            "quick": quick,
            "seed": seed,
            "workers": workers,
            "scheduler": scheduler,
            "out": str(out),
            "argv": list(argv) if argv is not None else None,
            "grid_size": len(grid),
        },
        "shared_runs": len(shared),
        "seed": seed,
        "runs": {
            "total": len(grid),
            "done_now": sweep.done,
            "skipped_as_done": sweep.skipped,
            "failed": int((sweep.runs["error"] != "").sum()) if "error" in sweep.runs else 0,
            "missing": len(grid) - len(sweep.runs),
        },
        "interrupted": sweep.interrupted,
        "aborted": sweep.aborted or None,
        "figures": [p.name for p in sweep.figures],
        "tables": [f"{t}.csv" for t in sweep.tables],
        "figure_error": sweep.figure_error or None,
        "cbalab_version": __version__,
        "git": git_commit(),
        "packages": versions(),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "started": started,
        "ended": now(),
        "wall_seconds": time.perf_counter() - wall,
    }
    sessions.append(
        {k: meta[k] for k in ("started", "ended", "wall_seconds", "git")} | {"done": sweep.done, "workers": workers}
    )
    if hasattr(mod, "pinned"):
        meta["pinned"] = mod.pinned()
    meta["rows_commits"] = rows_commits(sessions)
    meta["runs_sha256"] = sha256_file(folder / "runs.csv")
    meta["provenance"] = sweep_provenance(run_dir, grid, sweep_params(mod, quick, seed))
    atomic_write_json(folder / "meta.json", _plain(meta))
    return sweep


def _make_folder(out: Path, run_dir: Path) -> None:
    """Create ``run_dir`` under ``out``; ExperimentError naming ``--out`` when that cannot be done."""
    problem = unwritable_folder(out) or unwritable_folder(run_dir)
    if problem is None:
        try:
            run_dir.mkdir(parents=True, exist_ok=True)
        except PermissionError:
            problem = "permission denied"
        except OSError as e:
            problem = f"cannot be made ({type(e).__name__}: {e.strerror or e})"
    if problem is not None:
        raise ExperimentError(f"--out: {problem} (got {str(out)!r})")


def _bar(total: int, initial: int, name: str, enabled: bool) -> Any:
    """A tqdm bar over the runs (with ETA), or None."""
    if not enabled:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=initial, unit="run", desc=name, mininterval=0.5, file=sys.stderr)


# ------------------------------------------------------------------------------------------ the command line


def run_experiment(
    name: str,
    out: str | Path = "results",
    *,
    quick: bool = False,
    seed: int = 0,
    workers: int = 1,
    scheduler: str | None = None,
    progress: bool = True,
    argv: Iterable[str] | None = None,
    echo: Callable[[str], None] = print,
) -> int:
    """What ``cbalab experiment NAME`` does: :func:`run_sweep`, then its tables, counts and figures to ``echo``;
    returns the exit status (:data:`EXIT_OK`, :data:`EXIT_FAILED`, :data:`EXIT_INTERRUPTED`).

    ExperimentError (an unknown experiment, an ``out`` that cannot hold the results, a bad ``scheduler``) is the
    caller's exit 2.  ``argv`` is the command line recorded in meta.json.
    """
    sweep = run_sweep(
        name,
        out,
        quick=quick,
        seed=seed,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        argv=argv,
    )
    about = ABOUT.get(name)
    for tname, table in sweep.tables.items():
        echo(f"{tname} ({sweep.out / (tname + '.csv')}):")
        echo(console_table(table, about.console.get(tname, ()) if about else ()))
    failed = int((sweep.runs["error"] != "").sum()) if "error" in sweep.runs else 0
    echo(f"{name}: {len(sweep.runs)} runs in {sweep.out / 'runs.csv'}")
    echo(f"  {sweep.done} run now, {sweep.skipped} already done, {failed} failed")
    echo(f"  figures: {', '.join(p.name for p in sweep.figures) or 'none'}")
    if sweep.figure_error:
        echo(f"figures failed: {sweep.figure_error}")
    if sweep.aborted:
        echo(f"the sweep stopped: {sweep.aborted}; finished runs are kept, rerun the same command to resume")
    if sweep.interrupted:
        echo("interrupted: finished runs are kept; rerun the same command to resume")
    return sweep.exit_code


def run_all(
    out: str | Path,
    quick: bool = False,
    workers: int = 1,
    scheduler: str | None = None,
    seed: int = 0,
    progress: bool = False,
    echo: Callable[[str], None] = print,
) -> int:
    """``cbalab experiment all``: every experiment of :data:`EXPERIMENTS`, in order, into ``out`` (one command
    reproduces the paper's results; ``cbalab paper`` then rebuilds the paper from them).

    Each runs as :func:`run_sweep` would on its own (a rerun with the same ``out`` resumes); a failed run or
    figure does not stop the others, an interruption does.  Returns 0 when every experiment succeeded, 130
    when interrupted, 1 otherwise; ExperimentError (bad ``out``, ``workers`` or ``scheduler``) before any run.
    """
    if workers < 1:
        raise ExperimentError(f"--workers: must be >= 1 (got {workers})")
    if scheduler is not None:
        scheduler_address(scheduler)
    status = EXIT_OK
    for name in EXPERIMENTS:
        sweep = run_sweep(
            name,
            out,
            quick=quick,
            seed=seed,
            workers=workers,
            scheduler=scheduler,
            progress=progress,
            argv=sys.argv[1:],
        )
        failed = int((sweep.runs["error"] != "").sum()) if "error" in sweep.runs else 0
        echo(f"{name}: {len(sweep.runs)} runs ({sweep.done} now, {failed} failed) in {sweep.out / 'runs.csv'}")
        if sweep.figure_error:
            echo(f"{name}: figures failed: {sweep.figure_error.splitlines()[0]}")
        if sweep.exit_code == EXIT_INTERRUPTED:
            echo("interrupted: finished runs are kept; rerun the same command to resume")
            return EXIT_INTERRUPTED
        if sweep.exit_code != EXIT_OK:
            status = EXIT_FAILED
    return status
