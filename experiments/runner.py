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
  summary tables, each written as ``DIR/NAME/<name>.csv`` and printed.

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
end times.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import importlib.metadata
import json
import math
import multiprocessing
import os
import platform
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from cbalab import __version__
from cbalab.models.files import atomic_write_csv, atomic_write_json

#: Experiment name -> module that implements it (the registry of ``cbalab experiment --list``).
EXPERIMENTS: dict[str, str] = {
    "io-cost": "cbalab.experiments.runs.io_cost",
    "welfare": "cbalab.experiments.runs.welfare",
    "optimality": "cbalab.experiments.runs.optimality",
    "scaling": "cbalab.experiments.runs.scaling",
    "sensitivity": "cbalab.experiments.runs.sensitivity",
    "dynamic": "cbalab.experiments.runs.dynamic",
    "online-welfare": "cbalab.experiments.runs.online_welfare",
}

#: A run to do (grid index, key, parameters) and a finished one (…, outcome of :func:`execute`).
Todo = list[tuple[int, str, dict]]
Done = tuple[int, str, dict, dict]

#: How long to try to reach a Dask scheduler before the address counts as bad input.
CONNECT_TIMEOUT = "10s"

#: Packages whose versions meta.json records.
PACKAGES = ("numpy", "pandas", "pyomo", "highspy", "networkx", "matplotlib", "tqdm", "dask", "distributed")

#: Exit statuses of ``cbalab experiment`` (docs/interface.md): 0 every run done, 1 a run or a figure failed,
#: 2 bad input (unknown or unavailable experiment, bad option), 130 interrupted.
EXIT_OK, EXIT_FAILED, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


class ExperimentError(Exception):
    """A usage error: unknown experiment, an experiment whose module is missing, a bad option (exit 2)."""


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


def execute(module_name: str, params: dict) -> dict:
    """Run one grid point in whatever process this is; never raises for the run's own errors.

    Returns ``{"row": result columns or None, "error": "" or the error, "run_seconds": wall time}``.
    """
    start = time.perf_counter()
    try:
        module = importlib.import_module(module_name)
        row = module.run_one(dict(params))
        if not isinstance(row, dict):
            raise TypeError(f"run_one returned {type(row).__name__}, not a dict")
        clash = sorted(k for k in row if k in params and row[k] != params[k])
        if clash:
            raise ValueError(f"run_one changed the parameter column {clash[0]!r}")
        error = ""
    except Exception as e:  # a failed run is a result of the sweep, recorded, not a crash of it
        row = None
        last = traceback.extract_tb(e.__traceback__)[-1]
        error = f"{type(e).__name__}: {e} ({Path(last.filename).name}:{last.lineno})"
    return {"row": row, "error": error, "run_seconds": time.perf_counter() - start}


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


def _finished(run_dir: Path, key: str) -> dict | None:
    """The recorded run ``key`` if it finished without error, else None (missing, unreadable or failed)."""
    path = run_dir / f"{key}.json"
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if not doc.get("error") and doc.get("row") is not None else None


def assemble(run_dir: Path, grid: list[dict]) -> pd.DataFrame:
    """runs.csv's content: one row per recorded run of ``grid``, in grid order (runs not yet done are absent)."""
    rows = []
    for params in grid:
        key = run_key(params)
        path = run_dir / f"{key}.json"
        if not path.exists():
            continue
        doc = json.loads(path.read_text())
        rows.append({"run_key": key, **params, **(doc["row"] or {}), "error": doc["error"]})
    frame = pd.DataFrame(rows)
    if "error" in frame:
        frame["error"] = frame["error"].fillna("")
    return frame


def _local(module_name: str, todo: Todo, workers: int) -> Iterator[Done]:
    """Yield (index, key, params, outcome) as runs finish on ``workers`` local processes (1: this process)."""
    if workers <= 1:
        for index, key, params in todo:
            yield index, key, params, execute(module_name, params)
        return
    context = multiprocessing.get_context("spawn")
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_ignore_sigint)
    try:
        pending: dict[Future, tuple[int, str, dict]] = {}
        queue = iter(todo)
        for item in queue:  # keep 2 runs per worker in flight: a Ctrl-C then cancels the rest at once
            pending[pool.submit(execute, module_name, item[2])] = item
            if len(pending) >= 2 * workers:
                break
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for fut in finished:
                index, key, params = pending.pop(fut)
                yield index, key, params, fut.result()
                nxt = next(queue, None)
                if nxt is not None:
                    pending[pool.submit(execute, module_name, nxt[2])] = nxt
    finally:  # on Ctrl-C: runs not started are cancelled, the workers end with the run they are in
        pool.shutdown(wait=False, cancel_futures=True)


def _ignore_sigint() -> None:
    """Worker processes leave Ctrl-C to the runner, which stops the sweep and keeps every finished run."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _dask(module_name: str, todo: Todo, address: str) -> Iterator[Done]:
    """Connect to the Dask scheduler at ``address`` (ExperimentError if it cannot be reached), then run there."""
    from dask.distributed import Client

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT)
    except (OSError, TimeoutError) as e:
        raise ExperimentError(f"--scheduler: cannot reach a Dask scheduler at {address!r}: {e}") from None
    return _dask_results(client, module_name, todo)


def _dask_results(client: Any, module_name: str, todo: Todo) -> Iterator[Done]:
    """Yield (index, key, params, outcome) as the runs finish on ``client``'s cluster."""
    from dask.distributed import as_completed

    try:
        items = {}
        futures = []
        for index, key, params in todo:
            fut = client.submit(execute, module_name, params, key=f"cbalab-{key}-{os.getpid()}", pure=False)
            items[fut.key] = (index, key, params)
            futures.append(fut)
        for fut in as_completed(futures):
            index, key, params = items[fut.key]
            yield index, key, params, fut.result()
    finally:
        client.close()


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
) -> Sweep:
    """Run experiment ``name`` (or ``module``) into ``out/NAME/``: runs/, runs.csv, meta.json, figures, tables.

    Runs already recorded without error under ``out/NAME/runs/`` are skipped.
    KeyboardInterrupt stops the sweep after writing runs.csv and meta.json
    from the runs finished so far (``Sweep.interrupted``).
    """
    mod = module if module is not None else load_experiment(name)
    if workers < 1:
        raise ExperimentError(f"--workers: must be >= 1, got {workers}")
    started = _now()
    wall = time.perf_counter()
    grid = mod.grid(quick, seed)
    keys = [run_key(p) for p in grid]
    if len(set(keys)) != len(keys):
        raise ExperimentError(f"experiment {name!r}: its grid repeats a parameter set")
    folder = Path(out) / name
    run_dir = folder / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    todo = [(i, k, p) for i, (k, p) in enumerate(zip(keys, grid)) if _finished(run_dir, k) is None]
    sweep = Sweep(name, folder, pd.DataFrame(), skipped=len(grid) - len(todo))
    bar = _bar(len(grid), sweep.skipped, name, progress)
    source = _dask(mod.__name__, todo, scheduler) if scheduler else _local(mod.__name__, todo, workers)
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
    sweep.runs = assemble(run_dir, grid)
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
    sessions = _sessions(folder / "meta.json")
    meta: dict[str, Any] = {
        "schema": "cbalab/experiment@1",
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
        "git": _git(),
        "packages": _versions(),
        "machine": {
            "platform": platform.platform(),
            "python": sys.version.split()[0],
            "processor": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
        },
        "started": started,
        "ended": _now(),
        "wall_seconds": time.perf_counter() - wall,
    }
    sessions.append(
        {k: meta[k] for k in ("started", "ended", "wall_seconds", "git")} | {"done": sweep.done, "workers": workers}
    )
    atomic_write_json(folder / "meta.json", _plain(meta))
    return sweep


def _sessions(path: Path) -> list[dict]:
    """The earlier invocations recorded in an existing meta.json (a resumed sweep keeps its history)."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    if not isinstance(old, dict):
        return []
    if "sessions" in old:
        return list(old["sessions"])
    keys = ("started", "ended", "wall_seconds", "git")
    if not all(k in old for k in keys):
        return []
    done = old.get("runs", {}).get("done_now")
    return [{k: old[k] for k in keys} | {"done": done, "workers": old.get("config", {}).get("workers")}]


def _bar(total: int, initial: int, name: str, enabled: bool) -> Any:
    """A tqdm bar over the runs (with ETA), or None."""
    if not enabled:
        return None
    from tqdm import tqdm  # type: ignore[import-untyped]

    return tqdm(total=total, initial=initial, unit="run", desc=name, mininterval=0.5, file=sys.stderr)


def _now() -> str:
    """The current UTC time, ISO 8601 to the second."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def _versions() -> dict[str, str | None]:
    """Installed versions of :data:`PACKAGES` (None when one is missing)."""
    out: dict[str, str | None] = {}
    for pkg in PACKAGES:
        try:
            out[pkg] = importlib.metadata.version(pkg)
        except importlib.metadata.PackageNotFoundError:
            out[pkg] = None
    return out


def _git() -> dict[str, Any] | None:
    """The git commit (and whether the work tree has changes) of the checkout cbalab runs from, if it is one."""
    root = Path(__file__).resolve().parent.parent
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10, check=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return {"commit": commit, "dirty": bool(dirty)}


# ------------------------------------------------------------------------------------------ the command line


def add_experiment_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``cbalab experiment`` to an argparse subparsers object; its handler (``run``) is :func:`run_experiment`."""
    p = subparsers.add_parser(
        "experiment",
        help="run one of the paper's experiments into DIR/NAME/ (runs.csv, meta.json, figures)",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("name", nargs="?", help="the experiment (see --list)")
    p.add_argument("--list", action="store_true", help="print the experiment names, one per line")
    p.add_argument("--quick", action="store_true", help="the small grid (well under a minute, for CI)")
    p.add_argument("--out", default="results", help="output folder; a rerun with the same folder resumes")
    p.add_argument("--seed", type=int, default=0, help="the sweep seed; every run derives its own from it")
    p.add_argument("--workers", type=_workers, default=1, help="local worker processes (1: in this process)")
    p.add_argument(
        "--scheduler",
        default=None,
        help="a Dask scheduler address tcp://HOST:PORT instead of local workers (default: none)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.set_defaults(run=run_experiment)
    return p


def _workers(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 1 (got {text!r})") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1 (got {text!r})")
    return value


def run_experiment(args: argparse.Namespace, echo: Callable[[str], None] = print) -> int:
    """What ``cbalab experiment`` does; returns the exit status (ExperimentError is the caller's exit 2)."""
    if args.list:
        for name in EXPERIMENTS:
            echo(name)
        return EXIT_OK
    if not args.name:
        raise ExperimentError("experiment: give a NAME or --list")
    sweep = run_sweep(
        args.name,
        args.out,
        quick=args.quick,
        seed=args.seed,
        workers=args.workers,
        scheduler=args.scheduler,
        progress=not args.no_progress,
        argv=sys.argv[1:],
    )
    for tname, table in sweep.tables.items():
        echo(f"{tname} ({sweep.out / (tname + '.csv')}):")
        with pd.option_context("display.width", 200, "display.max_columns", 30, "display.max_rows", 80):
            echo(table.to_string(index=False))
    failed = int((sweep.runs["error"] != "").sum()) if "error" in sweep.runs else 0
    echo(
        f"{args.name}: {len(sweep.runs)} runs in {sweep.out / 'runs.csv'} ({sweep.done} run now, "
        f"{sweep.skipped} already done, {failed} failed); figures: {', '.join(p.name for p in sweep.figures) or 'none'}"
    )
    if sweep.figure_error:
        echo(f"figures failed: {sweep.figure_error}")
    if sweep.aborted:
        echo(f"the sweep stopped: {sweep.aborted}; finished runs are kept, rerun the same command to resume")
    if sweep.interrupted:
        echo("interrupted: finished runs are kept; rerun the same command to resume")
    return sweep.exit_code
