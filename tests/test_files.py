"""models/files.py: atomic writes leave either the old or the new complete file, never a temporary."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from cbalab.models.files import atomic_write_csv, atomic_write_json, atomic_write_text, sha256_file


def test_write_replaces_whole_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "out.txt"
    target.write_text("old content that is longer\n")
    atomic_write_text(target, "new\n")
    assert target.read_text() == "new\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_failed_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "doc.json"
    atomic_write_json(target, {"a": 1})
    with pytest.raises(ValueError):
        atomic_write_json(target, {"a": math.inf})
    assert json.loads(target.read_text()) == {"a": 1}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doc.json"]


def test_csv_round_trip_and_checksum(tmp_path: Path) -> None:
    frame = pd.DataFrame({"x_gb": [1.5, 2.0], "name": ["a", "b"]})
    path = atomic_write_csv(tmp_path / "f.csv", frame)
    pd.testing.assert_frame_equal(pd.read_csv(path), frame)
    assert path.read_bytes() == b"x_gb,name\n1.5,a\n2.0,b\n"
    assert sha256_file(path) == "da4891e5cda3d615c48c63ae33f7ff107ac20bb03fc9a05faeb36759c0f85824"
