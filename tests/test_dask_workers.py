"""The dask-workers benchmark (experiments/runs/dask_workers.py): its rows and its verdict."""

from __future__ import annotations

import pandas as pd
import pytest

from cbalab.experiments.runs import dask_workers


@pytest.mark.slow
def test_a_dask_worker_gives_the_rows_of_a_local_process() -> None:
    """One sweep on a one-worker local Dask cluster and one in this process agree on every column but timings."""
    _, on_dask = dask_workers.sweep_wall("sensitivity", True, 0, 1, dask=True)
    _, here = dask_workers.sweep_wall("sensitivity", True, 0, 1, dask=False)
    assert len(here) > 0 and not [c for c in here.columns if c.endswith("_seconds")]
    pd.testing.assert_frame_equal(on_dask, here)


def test_rows_that_differ_between_backends_make_the_measurement_not_ok(monkeypatch: pytest.MonkeyPatch) -> None:
    """A backend whose rows differ from the others' is reported (rows_agree False, ok False), not averaged in."""

    def fake(experiment: str, quick: bool, seed: int, workers: int, dask: bool) -> tuple[float, pd.DataFrame]:
        value = 2.0 if (dask and workers == 2) else 1.0
        return 4.0 / workers, pd.DataFrame({"run_key": ["a"], "x": [value]})

    monkeypatch.setattr(dask_workers, "sweep_wall", fake)
    out = dask_workers.measure(experiment="sensitivity")
    assert out["dask_speedup"] == out["local_speedup"] == 2.0
    assert out["rows_agree"] is False and out["ok"] is False
