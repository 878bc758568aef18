"""``cbalab bench replay-speed`` (experiments/runs/replay_speed.py): each policy's replay beside an older install's."""

from __future__ import annotations

import sys

from cbalab.experiments.runs import replay_speed


def test_an_install_against_itself_gives_the_same_summary() -> None:
    """With this install as its own reference, each policy's replays agree on every column (none is only here)
    and the speed-up is a ratio of two measured CPU times; the children run outside the working folder, so the
    reference is the install given, not a source tree that happens to be the current directory."""
    out = replay_speed.measure(reference=sys.executable, policies=("io-only",), jobs=300, repeats=1)
    entry = out["io-only"]
    assert entry["same_summary"] is True
    assert entry["columns_only_here"] == []
    assert entry["cpu_s"] > 0 and entry["reference_cpu_s"] > 0
    assert entry["speedup"] == entry["reference_cpu_s"] / entry["cpu_s"]


def test_the_large_online_replay_stops_at_its_cpu_limit_and_says_so() -> None:
    """With no CPU to spend, online AutoCBA on the generated trace stops after its first decision: ``finished``
    False, one decision counted with its active jobs, and its CPU ratio to CBA's replay (which finished) reported
    as what it is, a lower bound."""
    out = replay_speed.measure(policies=(), large=200, large_cpu_s=0.0)
    cost, welfare = out["large"]
    assert cost["finished"] is True and cost["unfinished_jobs"] == 0
    assert welfare["finished"] is False and welfare["decisions"] == 1
    assert welfare["unfinished_jobs"] == 200 - welfare["jobs_left"] and welfare["active_max"] >= 1
    assert out["large_online_over_cba"] == welfare["cpu_s"] / cost["cpu_s"]
