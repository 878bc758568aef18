"""The rows of runs.csv that decide paper/claims.md: ``cbalab experiment NAME --verify --sample claims``.

A claim reads an experiment's section values (experiments/paper/claims.py), which its run module's
``paper_section`` computes from runs.csv; which rows decide them is found by running that same code on the rows
perturbed, not by a list.  A row *decides* a claim when moving its result cells (every float column that is no
parameter of the grid and no timing) by :data:`MARGIN` relative, up or down, changes the claim's verdict, or a
value its rule reads by more than :data:`SENSITIVITY` of that margin (relative), or a count or word it reads.
These are the rows that give each maximum, minimum and median (a margin moves them one for one), the points of
a share or count within the margin of its threshold (they cross it), and the points of the few-replicate means
at those places; not the rows of a mean over many (one of N rows moves it by MARGIN/N).

The search is group testing (:func:`deciding`): the rows are perturbed a group at a time, each row by its own
factor (seeded, signs mixed, so that two rows of a ratio seldom cancel), a group that changes nothing is
cleared, one that does is halved down to single rows; each group is tried moved up and moved down (a point
just under a threshold crosses it only one way).  Each test runs the section with its figures left
undrawn (:func:`_undrawn`): the values are the same, a figure's layout costs most of a section's time.
Flags, statuses and counts of runs.csv are not perturbed: they are exact columns, recomputed by the canaries.

The rows a search found are kept beside runs.csv in ``deciding.json`` (:func:`write_known`, by ``--verify
--sample claims --record``).  A later search takes them as deciding without testing them (they are recomputed
anyway), holds them unperturbed and tests only the other rows, where few decide: most groups clear at the first
level, so the search costs about ``2 * GROUPS`` sections instead of one or two per row.  That is what lets CI
verify the claims rows on every commit (.ci/run).  A forged row is caught either way: one recorded as deciding
is recomputed, and one that a forgery made decide is found among the others and recomputed too.
"""

from __future__ import annotations

import contextlib
import json
import math
import multiprocessing
import random
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from cbalab.experiments.paper.claims import readings
from cbalab.experiments.paper.section import Results, ResultsUnusableError

#: The relative size of the forgery tested on each row: a row whose cells, moved by 1%, change a claim decides it.
MARGIN = 0.01

#: A value a claim reads counts as changed when it moves by more than this share of :data:`MARGIN` (relative).
SENSITIVITY = 0.1

#: The search starts from this many groups of consecutive rows (grid order keeps a point's rows together): a
#: group of a fraction 1/GROUPS of the rows moves a mean over all of them by less than SENSITIVITY * MARGIN.
GROUPS = 64

#: Each row's factor is ``1 ± MARGIN * u`` with ``u`` drawn in [LEAST, 1] (seeded by the row's position).
LEAST = 0.5


@contextlib.contextmanager
def _undrawn() -> Iterator[None]:
    """Sections computed without rendering or laying out their figures (their values do not depend on it)."""
    import matplotlib.figure
    import matplotlib.pyplot as plt

    from cbalab.experiments.paper import section

    render, layout = section.render, matplotlib.figure.Figure.tight_layout
    section.render = lambda fig: {}
    matplotlib.figure.Figure.tight_layout = lambda self, *a, **k: None  # type: ignore[method-assign]
    try:
        yield
    finally:
        section.render = render
        matplotlib.figure.Figure.tight_layout = layout  # type: ignore[method-assign]
        plt.close("all")


def claim_values(name: str, runs: pd.DataFrame, meta: dict) -> dict[tuple[str, str], Any]:
    """What the claims measured on experiment ``name``'s successful rows ``runs`` read, and their verdicts
    (claims.readings); the confirmation's claims on its parts (its run module's ``part_sections``)."""
    from cbalab.experiments.runner import load_experiment

    mod = load_experiment(name)
    res = Results(name, runs, meta, 0)
    with _undrawn():
        try:
            parts = getattr(mod, "part_sections", None)
            sections = parts(res) if parts is not None else {name: mod.paper_section(res)}
        except ResultsUnusableError:
            return {}
    return readings(sections)


def moved(before: dict[tuple[str, str], Any], after: dict[tuple[str, str], Any]) -> list[tuple[str, str]]:
    """The (claim, value) pairs of ``after`` that differ from ``before``: a float by more than SENSITIVITY *
    MARGIN relative, anything else (verdict, count, word) at all."""
    out = []
    for key in before.keys() | after.keys():
        a, b = before.get(key), after.get(key)
        if isinstance(a, float) and isinstance(b, float):
            if math.isnan(a) and math.isnan(b):
                continue
            if abs(a - b) <= SENSITIVITY * MARGIN * max(abs(a), abs(b)):
                continue
        elif a == b:
            continue
        out.append(key)
    return sorted(out)


def result_columns(runs: pd.DataFrame, params: set[str]) -> list[str]:
    """The float columns of ``runs`` that a run computed: no parameter, no timing, no error."""
    return [
        str(c)
        for c in runs.columns
        if pd.api.types.is_float_dtype(runs[c]) and c not in params and not str(c).endswith("_seconds") and c != "error"
    ]


#: What a search process holds: the experiment's name, successful rows, meta.json, the claims' readings on them,
#: the perturbed columns and each row's factor (set once per process by :func:`_start`).
_STATE: dict[str, Any] = {}


def _start(name: str, runs: pd.DataFrame, meta: dict, cols: list[str], factor: np.ndarray) -> None:
    """Hold the search's data in this process, and the claims' readings on the unperturbed rows."""
    _STATE.update(name=name, runs=runs, meta=meta, cols=cols, factor=factor)
    _STATE["base"] = claim_values(name, runs, meta)


def _changes(group: list[int]) -> tuple[bool, int]:
    """Whether moving the rows ``group`` up (then down) by their factors changes what a claim reads, and how many
    sections that took."""
    runs, cols, factor = _STATE["runs"], _STATE["cols"], _STATE["factor"]
    values = runs.loc[group, cols].to_numpy(dtype=float)
    for n, sign in enumerate((1.0, -1.0), 1):
        frame = runs.copy()
        frame.loc[group, cols] = values * (1.0 + sign * factor[group])[:, None]
        if moved(_STATE["base"], claim_values(_STATE["name"], frame, _STATE["meta"])):
            return True, n
    return False, 2


def deciding(
    name: str, folder: Path, params: set[str], workers: int = 1, known: Iterable[int] = ()
) -> tuple[list[int], int]:
    """The positions in ``folder``/runs.csv of the rows that decide a claim of experiment ``name`` (module
    docstring), and how many sections the search computed, on ``workers`` processes (1: this one).
    ``params``: the grid's parameter names; ``known``: positions already found deciding (:func:`read_known`),
    taken as they are, held unperturbed and not tested again."""
    from cbalab.experiments.meta import read_meta

    csv = pd.read_csv(folder / "runs.csv", keep_default_na=True)
    meta = read_meta(folder / "meta.json") or {}
    ok = np.ones(len(csv), dtype=bool)
    if "error" in csv:
        ok = (csv["error"].astype(object).fillna("").astype(str) == "").to_numpy()
    runs = csv[ok].reset_index(drop=True)
    position = np.flatnonzero(ok)
    cols = result_columns(runs, params)
    rng = random.Random(0)
    factor = np.array([rng.choice((-1.0, 1.0)) * MARGIN * rng.uniform(LEAST, 1.0) for _ in range(len(runs))])
    _start(name, runs, meta, cols, factor)
    given = sorted(set(known))
    if not _STATE["base"] or not cols:
        return given, 1
    held = {int(i) for i in np.flatnonzero(np.isin(position, given))}
    rest = [i for i in range(len(runs)) if i not in held]
    size = max(1, math.ceil(len(runs) / GROUPS))
    frontier = [rest[i : i + size] for i in range(0, len(rest), size)]
    found: list[int] = []
    tests = 1
    pool = None
    if workers > 1:
        context = multiprocessing.get_context("spawn")
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_start, initargs=_initargs())
    try:
        while frontier:
            answers = list(pool.map(_changes, frontier) if pool is not None else map(_changes, frontier))
            tests += sum(n for _, n in answers)
            nxt: list[list[int]] = []
            for group, (hit, _) in zip(frontier, answers, strict=True):
                if hit and len(group) == 1:
                    found.append(group[0])
                elif hit:
                    nxt += [group[: len(group) // 2], group[len(group) // 2 :]]
            frontier = nxt
    finally:
        if pool is not None:
            pool.shutdown()
    return sorted(set(given) | {int(position[i]) for i in found}), tests


def _initargs() -> tuple[Any, ...]:
    """This process's search data, for the worker processes' :func:`_start`."""
    return (_STATE["name"], _STATE["runs"], _STATE["meta"], _STATE["cols"], _STATE["factor"])


#: The file beside runs.csv that keeps the deciding rows of the last recorded search, by run key.
KNOWN_FILE = "deciding.json"


def read_known(folder: Path, keys: list[str]) -> list[int]:
    """The positions in ``keys`` (runs.csv's run keys, in order) of the rows ``folder``/deciding.json records as
    deciding; none when there is no such file.  A key no longer in runs.csv is dropped: the record is a
    starting point of the search, never a reason to skip a row."""
    path = folder / KNOWN_FILE
    if not path.exists():
        return []
    doc = json.loads(path.read_text())
    rows = set(doc.get("rows") or [])
    return [i for i, key in enumerate(keys) if key in rows]


def write_known(folder: Path, keys: list[str], rows: Iterable[int], sections: int, commit: str | None) -> Path:
    """Record the deciding rows ``rows`` (positions in ``keys``) in ``folder``/deciding.json, by run key, with
    the runs.csv they were found on, the search's size and the commit."""
    from cbalab.models.files import atomic_write_json, sha256_file

    doc = {
        "schema": "cbalab/deciding@1",
        "runs_sha256": sha256_file(folder / "runs.csv"),
        "margin": MARGIN,
        "sensitivity": SENSITIVITY,
        "groups": GROUPS,
        "sections": sections,
        "commit": commit,
        "rows": [keys[i] for i in sorted(set(rows))],
    }
    return atomic_write_json(folder / KNOWN_FILE, doc)
