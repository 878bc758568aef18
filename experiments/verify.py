"""``cbalab experiment NAME --verify``: recompute committed rows at the code at hand and compare them by kind.

``paper --check`` proves that the paper agrees with its runs.csv; this proves that runs.csv agrees with the code.
A sample of committed rows (:func:`choose`) is recomputed through the runner's own per-run function
(:func:`cbalab.experiments.backends.execute`) and every column but the timings (``*_seconds``) is compared
with the committed CSV cell (:func:`cell_text` writes a value as pandas wrote the column) by its kind
(experiments/columns.py): an exact column as text, a solver's number within a relative tolerance (``--exact``:
every column as text).  Each column's largest difference is printed; the first difference beyond its kind's
rule, in grid order, is reported with its run key and column (exit 1).

The samples (docs/reproduce.md, "Verifying rows"; why they are drawn so: docs/adr/0002-verification-by-column-kind.md):

* ``canaries``: a fixed set (the cheapest row of each level of the experiment's first parameter, within
  :data:`FIXED_BUDGET_S` estimated seconds) plus a
  rotating draw seeded by the commit, within :data:`ROTATING_BUDGET_S` estimated seconds; a row dearer than
  what is left of the budget is still drawn with probability left/cost, so no committed row is safe from a
  spot check.  CI runs these for every experiment (.ci/run).
* ``claims``: the rows that decide a number or a verdict of paper/claims.md: those whose result cells, moved by
  1%, move what a claim's rule reads (experiments/paper/deciding.py), found through the claims' own code.
* ``N``: stratified, chosen by ``--seed``: first a cheapest-first cover of every arm (each level of each
  parameter, :func:`arms`), then uniform draws up to N rows.  ``all``: every row.
* the default: ``canaries`` and ``claims`` together; with ``--quick``, ``all`` (against paper/quick/).

``--record`` writes a passing verification into meta.json (``verifications``), with the provenance of the
verifying runs (experiments/provenance.py), so that ``paper --check`` counts the rows fresh at this commit.
It refuses a sample that does not cover every arm, or that did not import every module changed since the rows'
record, and a failed verification records nothing.  When the claims were searched it also keeps their rows in
deciding.json, where the next search starts (experiments/paper/deciding.py); ``--sample claims --record``
writes only that file.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd

from cbalab.experiments import columns
from cbalab.experiments.backends import local_runs
from cbalab.experiments.errors import ExperimentError
from cbalab.experiments.meta import git_commit, now, read_meta
from cbalab.experiments.provenance import differences, record
from cbalab.experiments.runner import (
    EXIT_FAILED,
    EXIT_OK,
    load_experiment,
    row_of,
    run_key,
    shared_runs,
    sweep_params,
)
from cbalab.models.files import atomic_write_json

#: Estimated CPU seconds of the rotating part of the canaries, per experiment (the fixed part comes on top).
ROTATING_BUDGET_S = 12.0

#: Estimated CPU seconds of the fixed canaries, per experiment: the cheapest row of each level of the first
#: arm, cheapest levels first, while they fit (at least one row).
FIXED_BUDGET_S = 30.0

#: The least a row is estimated to cost, as a share of the sweep's mean CPU time per row: a run does more than
#: its timed part (its instance, its referee), so a timing of 0 s is no free run.
COST_FLOOR = 0.25

#: A parameter with more levels than this is an index, not an arm (optimality's instance ``index``).
MAX_ARM_LEVELS = 60

#: Parameters that are never arms: each run's own seed.
NOT_ARMS = ("seed",)


def cell_text(value: Any, float_column: bool) -> str:
    """``value`` as pandas' ``to_csv`` writes it in a column that is float (``float_column``) or not: "" for
    None and NaN, ``repr`` for floats (and for integers in a float column), ``str`` otherwise."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int | float) and (float_column or isinstance(value, float)):
        return repr(float(value))
    return str(value)


def committed(folder: Path) -> tuple[pd.DataFrame, set[str]]:
    """runs.csv of ``folder`` as text (every cell as written) and the names of its float columns."""
    csv = folder / "runs.csv"
    if not csv.is_file():
        raise ExperimentError(f"--verify: {csv} does not exist; give the results folder with --out")
    text = pd.read_csv(csv, dtype=str, keep_default_na=False)
    typed = pd.read_csv(csv)
    floats = {str(c) for c in typed.columns if pd.api.types.is_float_dtype(typed[c])}
    return text, floats


def arms(name: str, grid: list[dict]) -> list[str]:
    """The arm parameters of experiment ``name``'s grid: its run module's ``ARMS`` when it declares them (the
    factors whose levels run different code or settings, not the data windows they are repeated on), else every
    parameter but a run's seed and indexes (over :data:`MAX_ARM_LEVELS` levels)."""
    declared = getattr(load_experiment(name), "ARMS", None)
    if declared is not None:
        return list(declared)
    keys = list(grid[0]) if grid else []
    return [k for k in keys if k not in NOT_ARMS and len({repr(p.get(k)) for p in grid}) <= MAX_ARM_LEVELS]


def uncovered(names: list[str], grid: list[dict], chosen: Iterable[dict]) -> list[str]:
    """Every level of the arms ``names`` in ``grid`` (``param=value``) that no run of ``chosen`` has."""
    have = {(k, repr(p.get(k))) for p in chosen for k in names}
    need = sorted({(k, repr(p.get(k))) for p in grid for k in names})
    return [f"{k}={v}" for k, v in need if (k, v) not in have]


def costs(runs: pd.DataFrame, meta: dict) -> pd.Series:
    """Each row's estimated CPU seconds: the sum of its timing columns (``X_cpu_seconds`` beside ``X_seconds``
    counted once), at least :data:`COST_FLOOR` of the sweep's CPU time per row, or else that CPU time per row."""
    timings = [c for c in runs.columns if str(c).endswith("_seconds")]
    total = session_cpu(meta)
    flat = total / max(len(runs), 1) if total else 1.0
    if not timings:
        return pd.Series(flat, index=runs.index)
    timings = [c for c in timings if c.replace("_cpu_seconds", "_seconds") == c or c.replace("_cpu", "") not in timings]
    own = runs[timings].apply(pd.to_numeric, errors="coerce").fillna(0.0).sum(axis=1)
    return own.clip(lower=COST_FLOOR * flat)


def _cover(names: list[str], rows: list[int], params: list[dict], cost: pd.Series, grid: list[dict]) -> list[int]:
    """A cheapest-first cover of every level of the arms ``names`` by ``rows`` (greedy: most new levels per
    second)."""
    left = {(k, repr(p.get(k))) for p in grid for k in names}
    chosen: list[int] = []
    while left:
        best = max(
            rows, key=lambda i: (len(left & {(k, repr(params[i].get(k))) for k in names}) / max(cost[i], 1e-3), -i)
        )
        gain = left & {(k, repr(params[best].get(k))) for k in names}
        if not gain:
            break
        chosen.append(best)
        left -= gain
    return chosen


def choose(
    name: str,
    text: pd.DataFrame,
    params: list[dict],
    meta: dict,
    grid: list[dict],
    sample: str,
    seed: int,
    claims: Iterable[int] = (),
) -> list[int]:
    """The rows (positions in ``text``) of the sample ``sample`` ("all", "canaries", "claims", "default" or a
    count N), seeded by ``seed`` (module docstring); ``claims``: the rows that decide the claims
    (:func:`claim_rows`), taken whole by "claims" and "default"."""
    rows = list(range(len(text)))
    cost = costs(text, meta)
    if sample == "all":
        return rows
    rng = random.Random(seed)
    if sample.isdigit():
        cover = _cover(arms(name, grid), rows, params, cost, grid)
        rest = [i for i in rows if i not in cover]
        rng.shuffle(rest)
        return sorted(cover + rest[: max(int(sample) - len(cover), 0)])
    chosen: set[int] = set()
    if sample in ("canaries", "default"):
        first = arms(name, grid)[:1]
        levels = sorted({repr(params[i].get(first[0])) for i in rows}) if first else [""]
        cheapest = [
            min((i for i in rows if not first or repr(params[i].get(first[0])) == level), key=lambda i: (cost[i], i))
            for level in levels
        ]
        spent = 0.0
        for i in sorted(cheapest, key=lambda i: (cost[i], i)):
            if chosen and spent + cost[i] > FIXED_BUDGET_S:
                break
            chosen.add(i)
            spent += cost[i]
        order = rows[:]
        rng.shuffle(order)
        budget = ROTATING_BUDGET_S
        for i in order:
            if cost[i] <= budget:
                chosen.add(i)
                budget -= cost[i]
                continue
            if rng.random() < budget / cost[i]:
                chosen.add(i)
            break
    if sample in ("claims", "default"):
        chosen.update(claims)
    return sorted(chosen)


def claim_rows(
    name: str, folder: Path, keys: list[str], grid: list[dict], workers: int, echo: Callable[[str], None]
) -> tuple[list[int], int]:
    """The rows of ``folder``/runs.csv (run keys ``keys``) that decide a claim of paper/claims.md
    (experiments/paper/deciding.py), found by perturbing them through the claims' own code, starting from the
    rows its deciding.json records; and how many sections the search computed.  Says how many and how long."""
    from cbalab.experiments.paper.deciding import KNOWN_FILE, deciding, read_known

    start = time.perf_counter()
    known = read_known(folder, keys)
    rows, tests = deciding(name, folder, {k for p in grid for k in p}, workers, known)
    took = time.perf_counter() - start
    start_from = f"{len(known)} recorded in {KNOWN_FILE}, " if known else ""
    echo(
        f"{name}: {len(rows)} rows decide the claims ({start_from}{len(rows) - len(known)} found in {took:.0f} s, "
        f"{tests} sections computed)"
    )
    return rows, tests


def draw_chance(name: str, folder: Path, seeds: int = 1000) -> tuple[pd.Series, set[int]]:
    """How often the canaries of ``seeds`` commit seeds (0, 1, …) draw each committed row of ``folder`` (a share
    per row), and the fixed canaries (drawn by every seed): the chance that CI's canaries spot-check a given row
    at one commit (docs/reproduce.md, "Verifying rows")."""
    mod = load_experiment(name)
    meta = read_meta(folder / "meta.json") or {}
    config = meta.get("config") or {}
    text, _ = committed(folder)
    grid = mod.grid(bool(config.get("quick")), int(config.get("seed", 0)))
    by_key = {run_key(p): p for p in grid}
    params = [by_key[k] for k in text["run_key"]]
    counts = pd.Series(0, index=text.index)
    always: set[int] | None = None
    for seed in range(seeds):
        picked = choose(name, text, params, meta, grid, "canaries", seed)
        counts[picked] += 1
        always = set(picked) if always is None else always & set(picked)
    return counts / seeds, always or set()


def commit_seed() -> int:
    """The rotating canaries' seed: the first 8 hex digits of the checkout's commit (0 outside git)."""
    git = git_commit()
    return int(git["commit"][:8], 16) if git and git.get("commit") else 0


class Tally:
    """Every compared column's kind and its largest difference so far, over the recomputed rows
    (experiments/columns.py): ``solver`` columns within RTOL/ATOL, ``exact`` ones as text."""

    def __init__(self, name: str, floats: set[str], exact: bool) -> None:
        self.name, self.floats, self.exact = name, floats, exact
        self.kinds: dict[str, str] = {}
        self.largest: dict[str, float] = {}
        self.rows_differ: dict[str, int] = {}

    def kind(self, col: str) -> str:
        """``solver`` (a float column that experiments/columns.py declares a solver's) or ``exact`` (every
        column under ``--exact``)."""
        if col not in self.kinds:
            solver = col in self.floats and columns.solver_column(self.name, col)
            self.kinds[col] = "solver" if solver and not self.exact else "exact"
        return self.kinds[col]

    def compare(self, col: str, old: str, new: str) -> bool:
        """Note the difference of one cell pair; whether it passes its column's kind."""
        gap = columns.relative(old, new)
        self.largest[col] = max(self.largest.get(col, 0.0), gap)
        ok = old == new if self.kind(col) == "exact" else columns.close(old, new)
        if not ok:
            self.rows_differ[col] = self.rows_differ.get(col, 0) + 1
        return ok

    def lines(self) -> list[str]:
        """One line per compared column: its kind and largest relative difference (rows outside, if any)."""
        width = max((len(c) for c in self.kinds), default=0)
        out = []
        for col, kind in self.kinds.items():
            rule = "same text" if kind == "exact" else f"within {columns.RTOL:g} relative + {columns.ATOL:g}"
            line = f"  {col:<{width}}  {kind:<6}  {rule}: largest relative difference {self.largest[col]:.3g}"
            if self.rows_differ.get(col):
                line += f", {self.rows_differ[col]} rows outside"
            out.append(line)
        return out


def _differs(key: str, want: pd.Series, got: dict, floats: set[str], tally: Tally) -> str | None:
    """The first column (committed order, then new ones) where the recomputed row ``got`` differs beyond its
    kind's rule (:class:`Tally`), as a message; every column's difference is noted in ``tally``.

    A column that one side lacks is an empty cell there, as in runs.csv, where a run without a column of others
    has its cell empty."""
    names = [c for c in want.index if not str(c).endswith("_seconds")]
    names += [c for c in got if c not in want.index and not str(c).endswith("_seconds")]
    first = None
    for col in names:
        old = str(want[col]) if col in want.index else ""
        new = cell_text(got.get(col), col in floats)
        if not tally.compare(col, old, new) and first is None:
            first = f"run {key}, column {col} ({tally.kind(col)}): committed {old!r}, recomputed {new!r}"
    return first


def verify(
    name: str,
    folder: Path,
    *,
    sample: str = "default",
    seed: int | None = None,
    quick: bool = False,
    record_it: bool = False,
    workers: int = 1,
    exact: bool = False,
    echo: Callable[[str], None] = print,
) -> int:
    """What ``cbalab experiment NAME --verify`` does; returns 0 (every sampled row equal) or 1 (the first
    difference, named).  ExperimentError (exit 2) for bad input: no committed rows, a folder of the other size
    (``--quick``), a sample that is neither all, canaries, claims nor a count, a ``--record`` whose sample does
    not cover every arm or every changed module."""
    if not (sample in ("all", "canaries", "claims", "default") or (sample.isdigit() and int(sample) > 0)):
        raise ExperimentError(f"--sample: give all, canaries, claims or a count >= 1 (got {sample!r})")
    mod = load_experiment(name)
    meta = read_meta(folder / "meta.json")
    if meta is None:
        raise ExperimentError(f"--verify: {folder / 'meta.json'} does not exist; give the results folder with --out")
    config = meta.get("config") or {}
    if bool(config.get("quick")) != quick:
        size = "quick" if config.get("quick") else "full"
        raise ExperimentError(f"--verify: {folder} holds {size} rows; {'add' if size == 'quick' else 'drop'} --quick")
    text, floats = committed(folder)
    grid = mod.grid(quick, int(config.get("seed", 0)))
    by_key = {run_key(p): p for p in grid}
    missing = [k for k in text["run_key"] if k not in by_key]
    if missing:
        echo(f"{name}: run {missing[0]} of runs.csv is not in the grid of this code")
        return EXIT_FAILED
    params = [by_key[k] for k in text["run_key"]]
    if sample == "default" and quick:
        sample = "all"
    keys = [str(k) for k in text["run_key"]]
    claims: list[int] = []
    sections = 0
    if sample in ("claims", "default"):
        claims, sections = claim_rows(name, folder, keys, grid, workers, echo)
    picked = choose(name, text, params, meta, grid, sample, commit_seed() if seed is None else seed, claims)
    if record_it and sample != "claims":
        gaps = uncovered(arms(name, grid), grid, [params[i] for i in picked])
        if gaps:
            raise ExperimentError(f"--record: the sample leaves arms uncovered ({', '.join(gaps[:5])}); use --sample N")
    todo = [(i, str(text.at[i, "run_key"]), params[i]) for i in picked]
    # A row shared with another run (runner.shared_runs) is recomputed from its own parameters: the check of the
    # declaration that the two are one computation.
    shared = shared_runs(mod, grid)
    echo(f"{name}: recomputing {len(todo)} of {len(text)} rows ({sample}) at {_commit_text()}")
    modules: set[str] = set()
    data: set[str] = set()
    first: tuple[int, str] | None = None
    tally = Tally(name, floats, exact)
    for index, key, run, outcome in local_runs(mod.__name__, todo, workers):
        modules.update(outcome.get("modules") or [])
        data.update(outcome.get("data") or [])
        got = row_of(key, run, outcome["row"], outcome["error"], shared)
        problem = _differs(key, text.loc[index], got, floats, tally)
        if problem and (first is None or index < first[0]):
            first = (index, problem)
    for line in tally.lines():
        echo(line)
    if first is not None:
        echo(f"{name}: {first[1]}")
        return EXIT_FAILED
    rule = "the same text" if exact else "the same text, or within the tolerance of its kind"
    echo(f"{name}: {len(todo)} rows recomputed, every column but the timings {rule}")
    if record_it and sample in ("claims", "default"):
        from cbalab.experiments.paper.deciding import write_known

        git = git_commit()
        path = write_known(folder, keys, claims, sections, git["commit"] if git else None)
        echo(f"{name}: the {len(claims)} deciding rows recorded in {path}")
    if record_it and sample != "claims":
        _record(name, folder, meta, mod, modules, data, len(todo), sample, echo)
    return EXIT_OK


def _commit_text() -> str:
    """The checkout's commit, short, with + when its work tree has changes."""
    git = git_commit()
    return (git["commit"][:8] + ("+" if git.get("dirty") else "")) if git else "no git"


def _record(
    name: str,
    folder: Path,
    meta: dict,
    mod: ModuleType,
    modules: set[str],
    data: set[str],
    rows: int,
    sample: str,
    echo: Callable[[str], None],
) -> None:
    """Append the passing verification to meta.json; ExperimentError when its runs did not import a module
    that changed since the rows' last record (then they did not check it)."""
    from cbalab.experiments.paper.check import latest_provenance

    config = meta.get("config") or {}
    params = sweep_params(mod, bool(config.get("quick")), int(config.get("seed", 0)))
    before, _ = latest_provenance(meta)
    changed = [d.split()[1] for d in differences(before or {}, None) if d.startswith("module ")]
    unchecked = [m for m in changed if m not in modules]
    if unchecked:
        raise ExperimentError(f"--record: the sample did not run the changed module {unchecked[0]}; use --sample all")
    prov = record(modules, data, params) | {"complete": True}
    entry = {"git": git_commit(), "at": now(), "rows": rows, "sample": sample, "provenance": prov}
    meta["verifications"] = [*(meta.get("verifications") or []), entry]
    atomic_write_json(folder / "meta.json", meta)
    echo(f"{name}: recorded in {folder / 'meta.json'}: verified at {_commit_text()} on {rows} rows")


def expected_seconds(meta: dict | None, workers: int) -> float:
    """The wall time a rerun of an experiment should take on ``workers`` workers: its last sweep's CPU time
    (the sessions' wall time times their workers, meta.json) over ``workers``."""
    return session_cpu(meta, ran=True) / max(workers, 1)


def session_cpu(meta: dict | None, *, ran: bool = False) -> float:
    """An experiment's CPU seconds as its meta.json's ``sessions`` record them: each session's wall time times
    its workers, summed (``ran``: only the sessions that ran something)."""
    sessions = (meta or {}).get("sessions") or []
    return sum(
        float(x.get("wall_seconds") or 0) * int(x.get("workers") or 1) for x in sessions if x.get("done") or not ran
    )


def catch_up(results: Path, workers: int = 1, echo: Callable[[str], None] = print) -> int:
    """``cbalab experiment --stale``: rerun, from scratch into ``results``, exactly the experiments that
    ``paper --check`` calls stale, at one clean commit; the expected time first, from the last meta.json.
    ExperimentError (exit 2) outside a clean git checkout: rows computed from uncommitted code name no commit."""
    import shutil

    from cbalab.experiments.paper.check import stale_results
    from cbalab.experiments.runner import EXIT_INTERRUPTED, EXPERIMENTS, run_sweep

    git = git_commit()
    if git is None or git.get("dirty"):
        raise ExperimentError("--stale reruns at one clean commit: commit (or stash) the changes first")
    lines = stale_results(results)
    names = [n for n in EXPERIMENTS if any(line.startswith((f"{n}:", f"{n} (")) for line in lines)]
    for line in lines:
        echo(f"stale: {line}")
    if not names:
        echo("nothing is stale")
        return EXIT_OK
    seconds = sum(expected_seconds(read_meta(results / n / "meta.json"), workers) for n in names)
    echo(f"rerunning {', '.join(names)} at {_commit_text()}: about {seconds / 60:.0f} min with {workers} workers")
    status = EXIT_OK
    for name in names:
        folder = results / name
        shutil.rmtree(folder / "runs", ignore_errors=True)
        (folder / "meta.json").unlink(missing_ok=True)
        sweep = run_sweep(name, results, workers=workers, progress=False, argv=["experiment", "--stale"])
        echo(f"{name}: {len(sweep.runs)} runs ({sweep.done} now) into {folder}")
        if sweep.exit_code == EXIT_INTERRUPTED:
            return EXIT_INTERRUPTED
        status = max(status, sweep.exit_code)
    return status


def status(name: str, meta: dict) -> str:
    """One line of where experiment ``name``'s committed rows come from, as docs/reproduce.md states it:
    "NAME: computed at A" and, after a recorded verification, ", verified at B on N rows"."""
    from cbalab.experiments.paper.section import rows_commits

    computed = ", ".join(c[:7] + ("+" if dirty else "") for c, dirty in rows_commits(meta)) or "an unknown commit"
    line = f"{name}: computed at {computed}"
    done = [v for v in meta.get("verifications") or [] if isinstance(v, dict)]
    if done:
        last = done[-1]
        line += f", verified at {str((last.get('git') or {}).get('commit', '?'))[:7]} on {last.get('rows')} rows"
    return line
