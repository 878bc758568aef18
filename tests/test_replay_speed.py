"""``cbalab bench replay-speed`` (experiments/runs/replay_speed.py): the side-by-side replay of issue 42."""

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
