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
end times; :func:`read_meta` is the one reader of it (``cbalab paper`` too).

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

import argparse
import asyncio
import hashlib
import importlib
import importlib.metadata
import json
import math
import multiprocessing
import os
import platform
import re
import shutil
import signal
import subprocess
import sys
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from cbalab import __version__
from cbalab.models.files import atomic_write_csv, atomic_write_json, unreadable, unwritable_folder

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


@dataclass(frozen=True)
class About:
    """What ``cbalab experiment --list`` says of an experiment: one short line, and its measured wall times.

    ``quick_seconds`` is the wall time of ``cbalab experiment NAME --quick`` (one worker) on the project's
    2-core machine, twice: a second run at load average 3 and a first run (cold caches) at load average 6-7,
    which is what a newcomer on a busy machine sees; ``full_seconds`` the sum over the sessions of
    ``paper/results/NAME/meta.json`` with ``full_workers`` workers (tests/test_runner_hardening.py holds it
    to that file).  ``console`` names, per summary table, the columns
    printed on the console (at most 100 characters wide); the CSV has them all.
    """

    description: str
    quick_seconds: tuple[float, float]
    full_seconds: float
    full_workers: int
    console: dict[str, tuple[str, ...]] = field(default_factory=dict)


#: Experiment name -> what ``--list`` prints of it (every name of EXPERIMENTS has one).
ABOUT: dict[str, About] = {
    "io-cost": About(
        "CBA vs every cache baseline: IO cost on the Philly replay",
        (7.1, 20.5),
        1082.9,
        1,
        {
            "best_competitor": (
                "price_ratio",
                "cache_gb",
                "skew",
                "warmup",
                "bandwidth_gbps",
                "best_competitor",
                "saving_vs_best",
            ),
            "headline": ("competitor", "max_saving", "min_saving", "points", "times_best_competitor"),
        },
    ),
    "welfare": About(
        "AutoCBA vs GPU schedulers x cache policies under a budget",
        (3.3, 11.1),
        253.3,
        2,
        {
            "headline": (
                "method",
                "instances",
                "of_reference_mean",
                "of_reference_min",
                "autocba_over_geomean",
                "autocba_over_max",
            ),
            "references": ("jobs", "budget_fraction", "utility_mix", "io_price_scale", "p2_gap", "p2s_gap"),
        },
    ),
    "optimality": About(
        "each method's gap to the proven optimum (P1 variants, P2)",
        (15.3, 56.5),
        1666.9,
        1,
        {
            "gaps": ("problem", "variant", "method", "instances", "share_optimal", "median_gap", "worst_gap"),
            "certificates": ("problem", "variant", "method", "mean_slack", "worst_slack", "bound_valid_share"),
        },
    ),
    "scaling": About(
        "solve time vs jobs (10-100k): CBA, AutoCBA, LPs via HiGHS",
        (9.5, 13.5),
        1481.1,
        1,
        {
            "ratios_cost": ("jobs", "median_cba_seconds", "pyomo_lp_over_cba", "highspy_over_cba", "max_rel_diff"),
            "ratios_welfare": ("jobs", "median_autocba_seconds", "median_pyomo_lp_seconds", "pyomo_lp_over_autocba"),
        },
    ),
    "sensitivity": About(
        "when caching pays: cached fraction vs price x IO density",
        (5.7, 7.3),
        62.7,
        1,
    ),
    "dynamic": About(
        "online cache policies vs the offline optimum P3 (Philly)",
        (22.2, 51.9),
        1074.1,
        1,
    ),
    "online-welfare": About(
        "AutoCBA online vs GPU schedulers on elastic Philly replays",
        (7.6, 16.8),
        722.9,
        2,
        {
            "ratios": (
                "policy",
                "cache_policy",
                "budget_fraction",
                "utility_mix",
                "io_scale",
                "welfare_ratio",
                "welfare_total_ratio",
                "jct_ratio",
            )
        },
    ),
}

#: A run to do (grid index, key, parameters) and a finished one (…, outcome of :func:`execute`).
Todo = list[tuple[int, str, dict]]
Done = tuple[int, str, dict, dict]

#: How long to try to reach a Dask scheduler before the address counts as bad input (seconds): the one
#: deadline of the check that it answers as a scheduler, and of the client's connection after it.
CONNECT_TIMEOUT_S = 10.0

#: The transports a Dask scheduler address may name (distributed.comm); ``inproc`` is an in-process cluster.
SCHEDULER_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx", "inproc")

#: The widest a console summary line may be; wider tables are cut to the columns that fit (the CSV has all).
CONSOLE_WIDTH = 100

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
        if not row:
            raise ValueError("run_one returned no result column")
        clash = _clash(params, row)
        if clash:
            raise ValueError(f"run_one changed the parameter column {clash!r}")
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


def _clash(params: dict, row: dict) -> str | None:
    """The first column of ``row`` that would overwrite a parameter (or runs.csv's own ``run_key``/``error``)."""
    clash = sorted(k for k in row if k in ("run_key", "error") or (k in params and row[k] != params[k]))
    return clash[0] if clash else None


def _load_run(path: Path, params: dict) -> tuple[dict | None, str]:
    """The run recorded at ``path`` and "" when it is a well-formed run of ``params``; else None and why not.

    Why not is "" when there is nothing to keep and nothing to report (no file), and otherwise what is wrong
    with the file: not readable, not JSON, not an object, no ``"error"`` text, another run's parameters, no
    result columns in a successful run, or a column that would overwrite a parameter.
    """
    if not path.exists():
        return None, ""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
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
    clash = _clash(params, row)
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


def assemble(run_dir: Path, grid: list[dict]) -> pd.DataFrame:
    """runs.csv's content: one row per well-formed recorded run of ``grid``, in grid order (others are absent).

    A row is its parameters, then its result columns (which never overwrite a parameter, :func:`_load_run`),
    then ``error`` ("" for a successful run).
    """
    rows = []
    for params in grid:
        key = run_key(params)
        doc, _ = _load_run(run_dir / f"{key}.json", params)
        if doc is None:
            continue
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


def scheduler_address(address: str) -> str:
    """``address`` if it has the form of a Dask scheduler address, else ExperimentError naming ``--scheduler``.

    The form is ``SCHEME://HOST:PORT`` with SCHEME one of :data:`SCHEDULER_SCHEMES` and PORT in 1-65535, or
    ``HOST:PORT`` (tcp, as Dask reads it), or ``inproc://...`` (a cluster in this process).
    """
    scheme, sep, rest = address.partition("://")
    if not sep:
        scheme, rest = "tcp", address
    if scheme not in SCHEDULER_SCHEMES:
        raise ExperimentError(
            f"--scheduler: {scheme!r} is not a Dask transport ({', '.join(SCHEDULER_SCHEMES)}); "
            f"give tcp://HOST:PORT (got {address!r})"
        )
    if scheme == "inproc":
        if not rest:
            raise ExperimentError(f"--scheduler: an inproc address names its cluster (got {address!r})")
        return address
    host, colon, port = rest.rpartition(":")
    if not colon or not host.strip("[]") or "/" in rest:
        raise ExperimentError(f"--scheduler: must be tcp://HOST:PORT (got {address!r})")
    if not (port.isdigit() and 1 <= int(port) <= 65535):
        raise ExperimentError(f"--scheduler: the port must be a number from 1 to 65535 (got {address!r})")
    return address


def _identity(address: str, timeout: float) -> dict:
    """What the server at ``address`` says it is (Dask's ``identity`` call), within ``timeout`` seconds.

    Runs its own event loop in a thread, so it works inside a running loop (a notebook) too, and gives up at
    the deadline whatever the server does: accept and stay silent, or answer bytes that are no Dask message.
    """
    from distributed.comm import connect

    async def ask() -> Any:
        comm = await connect(address, timeout=timeout)
        try:
            await comm.write({"op": "identity"})
            return await comm.read()
        finally:
            comm.abort()

    async def bounded() -> Any:
        return await asyncio.wait_for(ask(), timeout)

    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="cbalab-dask-probe")
    try:
        reply = pool.submit(asyncio.run, bounded()).result(timeout=timeout + 2.0)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return reply if isinstance(reply, dict) else {}


def _dask(module_name: str, todo: Todo, address: str) -> Iterator[Done]:
    """Check that ``address`` is a Dask scheduler (ExperimentError, exit 2, if not), connect, then run there."""
    from dask.distributed import Client

    scheduler_address(address)
    try:
        what = _identity(address, CONNECT_TIMEOUT_S).get("type")
    except (TimeoutError, OSError):  # silent, refused or unreachable until the deadline
        raise ExperimentError(
            f"--scheduler: no Dask scheduler answered at {address!r} within {CONNECT_TIMEOUT_S:g} s"
        ) from None
    except Exception as e:  # bytes that are no Dask message: a MemoryError or a decoding error, among others
        raise ExperimentError(
            f"--scheduler: {address!r} is not a Dask scheduler ({type(e).__name__}: {str(e)[:120]})"
        ) from None
    if what != "Scheduler":
        raise ExperimentError(
            f"--scheduler: {address!r} answers as {what or 'something else'}, not as a Dask scheduler"
        )
    try:
        client = Client(address, timeout=f"{CONNECT_TIMEOUT_S}s")
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
    warn: Callable[[str], None] = _warn,
) -> Sweep:
    """Run experiment ``name`` (or ``module``) into ``out/NAME/``: runs/, runs.csv, meta.json, figures, tables.

    Runs already recorded without error under ``out/NAME/runs/`` are skipped; a run file that is not a
    well-formed run of its parameters is set aside and the run done again, with a line to ``warn``.
    KeyboardInterrupt stops the sweep after writing runs.csv and meta.json
    from the runs finished so far (``Sweep.interrupted``).  Before any run:
    ExperimentError (exit 2) for an ``out`` that cannot hold the results, a
    malformed ``scheduler`` address or one that is no Dask scheduler, and a
    meta.json that is not one (:func:`read_meta`).
    """
    mod = module if module is not None else load_experiment(name)
    if workers < 1:
        raise ExperimentError(f"--workers: must be >= 1 (got {workers})")
    if scheduler is not None:
        scheduler_address(scheduler)
    started = _now()
    wall = time.perf_counter()
    grid = mod.grid(quick, seed)
    keys = [run_key(p) for p in grid]
    if len(set(keys)) != len(keys):
        raise ExperimentError(f"experiment {name!r}: its grid repeats a parameter set")
    folder = Path(out) / name
    run_dir = folder / "runs"
    _make_folder(Path(out), run_dir)
    sessions = _sessions(folder / "meta.json")
    todo = []
    for i, (key, params) in enumerate(zip(keys, grid)):
        doc, why = _load_run(run_dir / f"{key}.json", params)
        if why:
            _set_aside(run_dir / f"{key}.json", why, warn)
        if doc is None or doc["error"]:
            todo.append((i, key, params))
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


def read_meta(path: str | Path) -> dict | None:
    """The meta.json at ``path`` (None when there is none), checked to be one: ExperimentError naming the
    file otherwise (exit 2).

    The fields that readers use must have their types: ``config`` and ``runs`` objects, ``sessions`` a
    list of objects, ``git`` an object or null, ``wall_seconds`` a number or null.  ``cbalab paper`` checks
    every experiment's meta.json through here before it reads any.
    """
    p = Path(path)
    if not p.exists():
        return None
    try:
        doc = json.loads(p.read_text(encoding="utf-8"))
    except OSError as e:
        raise ExperimentError(f"{p}: {unreadable(e)}") from None
    except ValueError as e:
        raise ExperimentError(f"{p}: not JSON ({e}); rerun the experiment or remove the file") from None
    if not isinstance(doc, dict):
        raise ExperimentError(f"{p}: holds {type(doc).__name__}, not a meta.json object; rerun the experiment")
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


def _sessions(path: Path) -> list[dict]:
    """The earlier invocations recorded in an existing meta.json (a resumed sweep keeps its history)."""
    old = read_meta(path)
    if old is None:
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


def plain(text: str) -> str:
    """``text`` without reST markup, for help printed on a terminal: double-backquoted literals and roles
    such as ``:func:`` keep their text and lose their markup."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``", r"\1", text)


def add_experiment_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Add ``cbalab experiment`` to an argparse subparsers object; its handler (``run``) is :func:`run_experiment`."""
    p = subparsers.add_parser(
        "experiment",
        help="run one of the paper's experiments into DIR/NAME/ (runs.csv, meta.json, figures)",
        description=plain(__doc__.split("\n\n")[0]),
    )
    p.add_argument("name", nargs="?", help="the experiment (see --list)")
    p.add_argument(
        "--list", action="store_true", help="print every experiment with what it measures and its measured times"
    )
    p.add_argument(
        "--quick",
        action="store_true",
        help="the small grid, for CI: 3 s to 1 min each on 2 cores (see --list)",
    )
    p.add_argument("--out", default="results", help="output folder; a rerun with the same folder resumes")
    p.add_argument("--seed", type=_seed, default=0, help="the sweep seed; every run derives its own from it")
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
    if not 1 <= value <= 4096:
        raise argparse.ArgumentTypeError(f"must be a whole number from 1 to 4096 (got {text!r})")
    return value


def _seed(text: str) -> int:
    """A sweep seed: a whole number from 0 to 2^63 - 1 (numpy's generators take no negative seed)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0 (got {text!r})") from None
    if not 0 <= value < 2**63:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to 2^63 - 1 (got {text!r})")
    return value


def _duration(seconds: float) -> str:
    """A measured wall time as --list prints it: ``21 s``, ``18 min``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def quick_time(about: About) -> str:
    """The two measured ``--quick`` times as --list and docs/reproduce.md print them: ``7-21 s``."""
    low, high = about.quick_seconds
    return f"{low:.0f}-{_duration(high)}"


def listing() -> list[str]:
    """The lines of ``cbalab experiment --list``: each experiment's name, measured times and what it measures."""
    width = max(len(n) for n in EXPERIMENTS) + 2
    lines = [f"{'':<{width}}{'--quick':>8}{'full':>16}  what it measures"]
    for name in EXPERIMENTS:
        about = ABOUT[name]
        full = f"{_duration(about.full_seconds)} ({about.full_workers}w)"
        lines.append(f"{name:<{width}}{quick_time(about):>8}{full:>16}  {about.description}")
    lines.append("wall clock, 2 cores: --quick with 1 worker (quiet to busy machine), full with (N) workers")
    return lines


def console_table(table: pd.DataFrame, columns: Iterable[str] = (), width: int = CONSOLE_WIDTH) -> str:
    """``table`` as console text at most ``width`` characters wide: the ``columns`` named (those it has), or
    else every column; then as many of them as fit, numbers to 4 significant digits, at most 40 rows, and
    a last line saying what was left out (the CSV has it all)."""
    chosen = [c for c in columns if c in table] or list(table.columns)
    rows = table[chosen].head(40)
    left_rows = len(table) - len(rows)
    kept: list[str] = []
    text = ""
    for column in chosen:
        trial = rows[[*kept, column]].to_string(index=False, float_format=lambda x: f"{x:.4g}")
        if kept and max(len(line) for line in trial.splitlines()) > width:
            break
        kept.append(column)
        text = trial
    omitted = len(table.columns) - len(kept)
    notes = [f"{omitted} more columns"] if omitted else []
    notes += [f"{left_rows} more rows"] if left_rows else []
    return text + (f"\n({', '.join(notes)} in the CSV)" if notes else "")


def run_experiment(args: argparse.Namespace, echo: Callable[[str], None] = print) -> int:
    """What ``cbalab experiment`` does; returns the exit status (ExperimentError is the caller's exit 2)."""
    if args.list:
        for line in listing():
            echo(line)
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
    about = ABOUT.get(args.name)
    for tname, table in sweep.tables.items():
        echo(f"{tname} ({sweep.out / (tname + '.csv')}):")
        echo(console_table(table, about.console.get(tname, ()) if about else ()))
    failed = int((sweep.runs["error"] != "").sum()) if "error" in sweep.runs else 0
    echo(f"{args.name}: {len(sweep.runs)} runs in {sweep.out / 'runs.csv'}")
    echo(f"  {sweep.done} run now, {sweep.skipped} already done, {failed} failed")
    echo(f"  figures: {', '.join(p.name for p in sweep.figures) or 'none'}")
    if sweep.figure_error:
        echo(f"figures failed: {sweep.figure_error}")
    if sweep.aborted:
        echo(f"the sweep stopped: {sweep.aborted}; finished runs are kept, rerun the same command to resume")
    if sweep.interrupted:
        echo("interrupted: finished runs are kept; rerun the same command to resume")
    return sweep.exit_code
