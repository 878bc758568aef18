"""experiments/runs/common.py: the shared atomic CSV writer of the measurement scripts, and its meta JSON."""

from __future__ import annotations

import json
import math

import pandas as pd

from cbalab.experiments.meta import git_commit
from cbalab.experiments.runs.common import meta_path, write_results
from cbalab.models.files import sha256_file


def test_writes_the_csv_then_a_meta_json_that_describes_it(tmp_path) -> None:
    rows = pd.DataFrame({"seed": [0, 1], "gap": [0.0, 0.25]})
    path = write_results(
        tmp_path / "deep" / "gaps.csv",
        rows,
        script="cbalab.experiments.runs.example",
        seed=7,
        arguments={"out": tmp_path, "caps": (1.0, math.inf), "variants": ["a", "b"], "quiet": True},
    )
    assert path == tmp_path / "deep" / "gaps.csv"
    assert pd.read_csv(path).equals(rows)
    meta = json.loads(meta_path(path).read_text())
    assert meta_path(path).name == "gaps.meta.json"
    assert meta["seed"] == 7 and meta["script"] == "cbalab.experiments.runs.example"
    assert meta["arguments"] == {"out": str(tmp_path), "caps": [1.0, None], "variants": ["a", "b"], "quiet": True}
    assert meta["rows"] == 2 and meta["columns"] == ["seed", "gap"]
    assert meta["sha256"] == sha256_file(path)
    assert {"python", "numpy", "highspy"} <= set(meta["versions"])
    assert meta["git"] == git_commit()  # the commit it ran at (None outside a git checkout)
    assert sorted(p.name for p in path.parent.iterdir()) == ["gaps.csv", "gaps.meta.json"]  # no temporary left
