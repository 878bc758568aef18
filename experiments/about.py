"""What each experiment says of itself on the console: the one-line descriptions and measured times of
``cbalab experiment --list`` (:data:`ABOUT`, held to paper/results/NAME/meta.json by tests/test_runner.py), and
the summary tables cut to the console's width (the CSV files beside runs.csv have every column)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import pandas as pd


@dataclass(frozen=True)
class About:
    """What ``cbalab experiment --list`` says of an experiment: one short line, and its measured wall times.

    ``quick_seconds`` is the wall time of ``cbalab experiment NAME --quick`` (one worker) on the project's
    2-core machine, twice: a second run at load average 3 and a first run (cold caches) at load average 6-7,
    which is what a newcomer on a busy machine sees; ``full_seconds`` the sum over the sessions of
    ``paper/results/NAME/meta.json`` with ``full_workers`` workers (tests/test_runner.py holds it
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
        934.1,
        2,
        {
            "points": ("price_ratio", "n_datasets", "skew", "cache_gb", "bandwidth_gbps", "mean_saving", "cheapest"),
            "headline": ("compared_points", "max_mean_saving", "share_reaching_20_5pct", "reaching_conditions"),
        },
    ),
    "welfare": About(
        "AutoCBA vs GPU schedulers x cache policies under a budget",
        (3.3, 11.1),
        372.7,
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
        2093.0,
        2,
        {
            "gaps": ("problem", "variant", "method", "instances", "share_optimal", "median_gap", "worst_gap"),
            "certificates": ("problem", "variant", "method", "mean_slack", "worst_slack", "bound_valid_share"),
        },
    ),
    "scaling": About(
        "solve time vs jobs (10-100k): CBA, AutoCBA, LPs via HiGHS",
        (9.5, 13.5),
        68.3,
        2,
        {
            "ratios_cost": ("jobs", "median_cba_seconds", "pyomo_lp_over_cba", "highspy_over_cba", "max_rel_diff"),
            "ratios_welfare": ("jobs", "median_autocba_seconds", "median_pyomo_lp_seconds", "pyomo_lp_over_autocba"),
        },
    ),
    "sensitivity": About(
        "when caching pays: cached fraction vs price x IO density",
        (5.7, 7.3),
        5.1,
        2,
    ),
    "dynamic": About(
        "online cache policies vs the offline optimum P3 (Philly)",
        (22.2, 51.9),
        453.8,
        2,
    ),
    "online-welfare": About(
        "AutoCBA online vs GPU schedulers on elastic Philly replays",
        (7.6, 16.8),
        201.0,
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
    "confirm": About(
        "the headline claims on held-out data, by the frozen rules",
        (13.5, 14.8),
        3388.2,
        2,
        {"verdicts": ("claim", "part", "verdict")},
    ),
}


#: The widest a console summary line may be; wider tables are cut to the columns that fit (the CSV has all).
CONSOLE_WIDTH = 100


def plain(text: str) -> str:
    """``text`` without reST markup, for help printed on a terminal: double-backquoted literals and roles
    such as ``:func:`` keep their text and lose their markup."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`", r"\1", text)
    return re.sub(r"``([^`]+)``", r"\1", text)


def duration(seconds: float) -> str:
    """A measured wall time as --list prints it: ``21 s``, ``18 min``."""
    return f"{seconds:.0f} s" if seconds < 90 else f"{seconds / 60:.0f} min"


def quick_time(about: About) -> str:
    """The two measured ``--quick`` times as --list and docs/reproduce.md print them: ``7-21 s``."""
    low, high = about.quick_seconds
    return f"{low:.0f}-{duration(high)}"


def listing() -> list[str]:
    """The lines of ``cbalab experiment --list``: each experiment's name, measured times and what it measures."""
    width = max(len(n) for n in ABOUT) + 2
    lines = [f"{'':<{width}}{'--quick':>8}{'full':>16}  what it measures"]
    for name, about in ABOUT.items():
        full = f"{duration(about.full_seconds)} ({about.full_workers}w)"
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
