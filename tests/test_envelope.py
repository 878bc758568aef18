"""An oracle ``-tuned`` envelope never falls below its own untuned scheduler."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from cbalab.experiments.runs import online_welfare, welfare

RESULTS = Path(__file__).resolve().parents[1] / "paper" / "results"


def _setting(policy: str, value: float, jobs: int = 250) -> dict:
    base = {"window_start": 0, "window_jobs": jobs, "budget_fraction": 0.5, "utility_mix": "mixed"}
    base |= {"io_scale": 1.0, "restart_delay_s": 0.0, "seed": 1, "cache_policy": "silod"}
    return {**base, "policy": policy, "welfare": value, "restarts": int(value)}


def test_an_online_envelope_is_the_better_of_its_two_whole_replays() -> None:
    """Where the per-event re-solved split ends below the naive split, the envelope takes the naive replay's
    results (every result column, its dtype kept) and says so; where it ends above, it keeps its own."""
    runs = pd.DataFrame(
        [
            _setting("optimus", 6031.0),
            _setting("optimus-tuned", 5549.0),
            _setting("gavel-tput", 100.0),
            _setting("gavel-tput-tuned", 120.0),
        ]
    )
    out = online_welfare.envelope(runs).set_index("policy")
    assert out.loc["optimus-tuned", "welfare"] == 6031.0 and out.loc["optimus-tuned", "restarts"] == 6031
    assert out.loc["optimus-tuned", "envelope_from"] == "naive split"
    assert out.loc["gavel-tput-tuned", "welfare"] == 120.0
    assert out.loc["gavel-tput-tuned", "envelope_from"] == "per-event splits"
    assert out["restarts"].dtype == runs["restarts"].dtype
    assert online_welfare.envelope(runs[~runs["policy"].str.endswith("-tuned")]).equals(
        runs[~runs["policy"].str.endswith("-tuned")]
    )


def _tuned_vs_untuned(frame: pd.DataFrame, index: list[str], method: pd.Series) -> list[tuple[str, float, float]]:
    """Every (tuned method, its welfare, its untuned scheduler's) pair of ``frame`` in the same instance."""
    wide = frame.assign(method=method).pivot_table(index=index, columns="method", values="welfare", aggfunc="first")
    pairs = []
    for m in wide.columns:
        if "-tuned" in str(m):
            both = wide[[m, str(m).replace("-tuned", "")]].dropna()
            pairs += [(str(m), float(t), float(u)) for t, u in both.itertuples(index=False)]
    return pairs


@pytest.mark.parametrize("name", ["welfare", "online-welfare"])
def test_no_committed_envelope_falls_below_its_scheduler(name: str) -> None:
    """On the committed rows, each tuned variant as the paper reports it (the static rows as they are, the
    online ones through :func:`online_welfare.envelope`) is at least its untuned scheduler in every instance."""
    path = RESULTS / name / "runs.csv"
    if not path.exists():
        pytest.skip(f"{path} not committed")
    runs = pd.read_csv(path)
    if name == "welfare":
        pairs = _tuned_vs_untuned(runs, list(welfare.INSTANCE), runs["method"])
    else:
        runs = online_welfare.envelope(runs)
        method = runs["policy"].astype(str) + "[" + runs["cache_policy"].astype(str) + "]"
        pairs = _tuned_vs_untuned(runs, list(online_welfare.SETTING), method)
    assert pairs
    below = [(m, t, u) for m, t, u in pairs if t < u * (1 - 1e-9) - 1e-9]
    assert below == []
