"""A tiny experiment for the runner's tests: deterministic rows, a timing column, failures on demand.

``CBALAB_TOY_FAIL`` (comma-separated run indexes) makes those runs raise
ValueError; ``CBALAB_TOY_INTERRUPT`` (one index) makes that run raise
KeyboardInterrupt, as Ctrl-C would in the middle of a sweep.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.experiments.plotting import figure, save
from cbalab.experiments.runner import derive_seed

NAME = "toy"


def grid(quick: bool, seed: int) -> list[dict]:
    """Eight runs (quick) or twelve, each with its own derived seed."""
    return [{"x": i, "seed": derive_seed(seed, "toy", i)} for i in range(8 if quick else 12)]


def run_one(params: dict) -> dict:
    """A seeded draw, a value computed from it, and a wall time (which differs between sweeps)."""
    x = int(params["x"])
    if str(x) in os.environ.get("CBALAB_TOY_FAIL", "").split(","):
        raise ValueError(f"toy run {x} fails on purpose")
    if os.environ.get("CBALAB_TOY_INTERRUPT") == str(x):
        raise KeyboardInterrupt
    start = time.perf_counter()
    draw = float(np.random.default_rng(int(params["seed"])).normal())
    return {"draw": draw, "value": x * x + draw, "label": f"run-{x}", "work_seconds": time.perf_counter() - start}


def figures(runs: pd.DataFrame, outdir: Path) -> list[Path]:
    """value against x."""
    fig, ax = figure()
    ax[0, 0].plot(runs["x"], runs["value"], "o")
    return save(fig, outdir, "toy")


def tables(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """The number of rows."""
    return {"summary": pd.DataFrame([{"rows": len(runs)}])}
