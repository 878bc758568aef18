"""AutoCBA's welfare over its baselines', the measure the welfare and online-welfare sections both report.

A baseline is a ``SCHEDULER[CACHE POLICY]`` pairing; each is paired with AutoCBA on the same instance or
replay setting.  A baseline at (almost) zero welfare is *starved* (:data:`STARVED`): counted apart, since
its ratio means nothing.  The strongest baseline is taken over the faithful schedulers only
(experiments/methods.py ``FAITHFUL``).
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from cbalab.experiments.methods import FAITHFUL
from cbalab.experiments.paper.section import PAPER_WELFARE_RATIO, STARVED, Section
from cbalab.experiments.paper.text import fixed, pct
from cbalab.models.kernels import libm


def pairings(wide: pd.DataFrame, keys: Iterable[str], baselines: list) -> pd.DataFrame:
    """One row per (setting, baseline) of ``wide`` (a row per setting, a welfare column per method).

    Columns: the setting's ``keys``, ``method``, the baseline's welfare ``base``, AutoCBA's ``auto`` and
    ``scheduler`` (the method's name before ``[``).  A setting in which a baseline was not run (an empty
    cell of ``wide``) gives no row: the long form is built explicitly, row-major (setting, then baseline),
    because ``DataFrame.stack`` keeps empty cells as NaN in pandas 3 and drops them in pandas 2, which
    would make the pairing counts depend on the installed pandas.
    """
    keys = list(keys)
    values = wide[baselines].to_numpy(dtype=float)
    rows, cols = values.shape
    long = wide.index.to_frame(index=False).iloc[np.repeat(np.arange(rows), cols)].reset_index(drop=True)
    long["method"] = np.tile(np.asarray(baselines, dtype=object), rows)
    long["base"] = values.ravel()
    long = long[~np.isnan(long["base"].to_numpy())].reset_index(drop=True)
    long = long.merge(wide["autocba"].rename("auto").reset_index(), on=keys)
    long["scheduler"] = long["method"].astype(str).str.split("[").str[0]
    return long


def geomean(ratios: pd.Series) -> float:
    """The geometric mean of positive ratios, exp of the correctly rounded mean of ``math.log`` (the C library's
    scalar log and exp, not numpy's CPU-dispatched SIMD kernels: one answer on every machine)."""
    logs = libm(math.log, ratios.to_numpy(dtype=float)).tolist()
    return math.exp(math.fsum(logs) / len(logs))


def unstarved(long: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame]:
    """Which rows of :func:`pairings` are starved, and the others with AutoCBA's ratio to them (``ratio``)."""
    starved = long["base"] <= STARVED * long["auto"]
    pos = long[~starved].copy()
    pos["ratio"] = pos["auto"] / pos["base"]
    return starved, pos


def ratio_macros(s: Section, pos: pd.DataFrame, who: str, scale: str, least: bool = False) -> None:
    """The largest ratio and where (``MaxRatio``, ``MaxRatio<who>``, budget, mix, IO price scale ``scale``),
    the least (``MinRatio``, ``MinRatio<who>``, when ``least``), the median and the share at the seed paper's
    2.27x or more."""
    top = pos.loc[pos["ratio"].idxmax()]
    s.number("MaxRatio", float(top["ratio"]), fixed(float(top["ratio"]), 2))
    s.word(f"MaxRatio{who}", str(top["method"]))
    s.number("MaxRatioBudget", float(top["budget_fraction"]), fixed(float(top["budget_fraction"]), 2))
    s.word("MaxRatioMix", str(top["utility_mix"]))
    s.number("MaxRatioScale", float(top[scale]), fixed(float(top[scale]), 0))
    if least:
        low = pos.loc[pos["ratio"].idxmin()]
        s.number("MinRatio", float(low["ratio"]), fixed(float(low["ratio"]), 2))
        s.word(f"MinRatio{who}", str(low["method"]))
    s.number("MedianRatio", float(pos["ratio"].median()), fixed(float(pos["ratio"].median()), 2))
    at_least = float((pos["ratio"] >= PAPER_WELFARE_RATIO).mean())
    s.number("ShareAtLeastPaperPct", at_least, pct(at_least))


def faithful_baselines(baselines: Iterable) -> list:
    """The baselines whose scheduler is a faithful one (experiments/methods.py ``FAITHFUL``)."""
    return [m for m in baselines if str(m).split("[")[0] in FAITHFUL]


def vs_strongest(wide: pd.DataFrame, auto: str, group: list) -> pd.Series:
    """Per row of ``wide``, AutoCBA over the strongest method of ``group`` (rows where that one is starved dropped)."""
    if not group:
        return pd.Series(dtype=float)
    strongest = wide[group].max(axis=1)
    return (wide[auto] / strongest.where(strongest > STARVED * wide[auto])).dropna()
