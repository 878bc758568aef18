"""Where AutoCBA's welfare gain comes from: reading utilities versus IO-awareness.

Per instance (a static welfare instance, docs/model.md §5, or an online
setting, §7), with W(m) the referee's welfare of method m on it:

* ``F`` = best faithful: max of W over every faithful IO-unaware scheduler
  (experiments/methods.py ``FAITHFUL``) × every cache policy, ``SCHED[POLICY]``;
* ``U`` = best utility-greedy: max of W over ``utility-greedy[POLICY]``
  (reads utilities, IO-unaware);
* ``A`` = W(autocba) (reads utilities and is IO-aware).

The utility share is (U − F) / (A − F): the part of AutoCBA's gain over the
strongest faithful baseline that reading utilities alone recovers; the IO
share is 1 − that.  An instance with A − F ≤ 0 (AutoCBA does not beat the
baseline) has no gain to split: it is excluded and counted.  A share above 1
means utility-greedy beat AutoCBA there (AutoCBA is an approximation, §6b).
Reported: the median share over the counted instances and the aggregate share
Σ(U − F) / Σ(A − F).  Only the untuned (naive) forms enter, unless ``tuned``.

:func:`steps` is the table by step (each faithful scheduler × cache policy,
``utility-greedy`` × cache policy, AutoCBA): what share of AutoCBA's gain each
method recovers; :func:`add_to_section` puts the summary and that table in an
experiment's paper section (welfare, online-welfare), where claims.md's rows
WelfareSource and OnlineSource read them (experiments/paper/rules.py).
"""

from __future__ import annotations

import pandas as pd

from cbalab.experiments.methods import FAITHFUL
from cbalab.experiments.paper.section import Section
from cbalab.experiments.paper.text import booktabs, fixed, integer, pct, tex_escape

GREEDY = "utility-greedy"


def _scheduler(method: pd.Series) -> pd.Series:
    """The scheduler part of ``SCHED[POLICY]`` method names."""
    return method.str.split("[", n=1).str[0]


def shares(runs: pd.DataFrame, key: list[str], tuned: bool = False) -> pd.DataFrame:
    """Per instance (one row per ``key`` value): A, F, U, the utility share, and whether it counts.

    ``runs`` holds one row per method and instance with ``method``, ``welfare``
    and ``feasible``; infeasible rows score nothing.  With ``tuned`` the
    ``-tuned`` envelopes join their schedulers' pools.
    """
    faithful = list(FAITHFUL) + ([f"{s}-tuned" for s in FAITHFUL] if tuned else [])
    greedy = [GREEDY] + ([f"{GREEDY}-tuned"] if tuned else [])
    w = runs["welfare"].where(runs["feasible"].astype(bool))
    sched = _scheduler(runs["method"])
    frame = runs[key].assign(
        A=w.where(runs["method"] == "autocba"),
        F=w.where(sched.isin(faithful)),
        U=w.where(sched.isin(greedy)),
    )
    out = frame.groupby(key, dropna=False)[["A", "F", "U"]].max().reset_index()
    gain = out["A"] - out["F"]
    out["counted"] = gain > 0
    out["utility_share"] = ((out["U"] - out["F"]) / gain).where(out["counted"])
    return out


def summary(per_instance: pd.DataFrame) -> dict[str, float]:
    """Median and aggregate utility / IO shares (in %), and the instances counted and excluded."""
    ok = per_instance[per_instance["counted"]]
    agg = float((ok["U"] - ok["F"]).sum() / (ok["A"] - ok["F"]).sum()) if len(ok) else float("nan")
    med = float(ok["utility_share"].median()) if len(ok) else float("nan")
    return {
        "UtilityShareMedianPct": 100 * med,
        "UtilityShareAggPct": 100 * agg,
        "IoShareMedianPct": 100 * (1 - med),
        "IoShareAggPct": 100 * (1 - agg),
        "Counted": float(len(ok)),
        "Excluded": float(len(per_instance) - len(ok)),
    }


def steps(runs: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    """One row per method of the three steps (faithful scheduler × cache, ``utility-greedy`` × cache, AutoCBA):
    the instances it ran on among those with a gain, the median of W(m) / A, and the share of AutoCBA's gain
    over the strongest faithful baseline it recovers, Σ(W(m) − F) / Σ(A − F) over those instances."""
    per = shares(runs, key)
    counted = per[per["counted"]][[*key, "A", "F"]]
    w = runs["welfare"].where(runs["feasible"].astype(bool))
    sched = _scheduler(runs["method"])
    rows = []
    for step, names in (
        ("IO-unaware scheduler", list(FAITHFUL)),
        ("utility-aware, IO-unaware", [GREEDY]),
        ("utility- and IO-aware", ["autocba"]),
    ):
        mine = runs[sched.isin(names)].assign(W=w)
        for method, g in mine.groupby("method", sort=True):
            m = g[[*key, "W"]].merge(counted, on=key).dropna(subset=["W"])
            if m.empty:
                continue
            rows.append(
                {
                    "step": step,
                    "method": str(method),
                    "instances": len(m),
                    "of_autocba_median": float((m["W"] / m["A"]).median()),
                    "gain_share": float((m["W"] - m["F"]).sum() / (m["A"] - m["F"]).sum()),
                }
            )
    return pd.DataFrame(rows, columns=["step", "method", "instances", "of_autocba_median", "gain_share"])


def add_to_section(s: Section, runs: pd.DataFrame, key: list[str], table: str) -> None:
    """The decomposition's values in ``s`` (fractions: UtilityShareAgg, UtilityShareMedian, IoShareAgg;
    SourceCounted, SourceExcluded; GreedyLeadMedian and GreedyLeadMax, AutoCBA / the best utility-greedy
    pairing per instance) and its step table ``tab-<table>.tex``; nothing when no instance has both AutoCBA
    and a faithful baseline, only the counts when AutoCBA beats the faithful baselines on none."""
    per = shares(runs, key)
    if not (per["A"].notna() & per["F"].notna()).any():
        return
    sm = summary(per)
    s.number("SourceCounted", sm["Counted"], integer(sm["Counted"]))
    s.number("SourceExcluded", sm["Excluded"], integer(sm["Excluded"]))
    if not sm["Counted"]:
        return
    for name in ("UtilityShareAgg", "UtilityShareMedian", "IoShareAgg"):
        value = sm[f"{name}Pct"] / 100
        s.number(name, value, pct(value, 0))
    lead = (per["A"] / per["U"]).where(per["U"] > 0).dropna()
    if len(lead):
        s.number("GreedyLeadMedian", float(lead.median()), fixed(float(lead.median()), 3))
        s.number("GreedyLeadMax", float(lead.max()), fixed(float(lead.max()), 2))
    body = [
        [
            tex_escape(r.step),
            tex_escape(r.method),
            integer(r.instances),
            fixed(r.of_autocba_median, 3),
            pct(r.gain_share, 0),
        ]
        for r in steps(runs, key).itertuples()
    ]
    heads = ["step", "method", "instances", "of AutoCBA (median)", "gain share \\%"]
    s.table(table, booktabs(heads, body, "llrrr"))
