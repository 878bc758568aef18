"""models/files.py: atomic writes leave either the old or the new complete file, never a temporary, and never
replace what is not a regular file."""

from __future__ import annotations

import json
import math
import os
import stat
from pathlib import Path

import pandas as pd
import pytest

from cbalab.models.files import (
    NOT_REGULAR,
    NotARegularFileError,
    atomic_write_csv,
    atomic_write_json,
    atomic_write_text,
    sha256_file,
    unwritable_file,
)


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


def test_a_pipe_is_refused_and_kept_a_symbolic_link_is_written_through(tmp_path: Path) -> None:
    """An output path that is not a regular file (here a pipe; /dev/null alike) is refused by the check the
    commands run first and by the writer itself, and stays what it was: a rename would have replaced it by a
    regular file (as root, /dev/null); so is a loop of links.  A symbolic link is written through: the file it
    points to gets the content, the link stays a link, and the path returned is the one given."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    assert unwritable_file(pipe) == NOT_REGULAR
    with pytest.raises(NotARegularFileError):
        atomic_write_text(pipe, "x\n")
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
    target, link = tmp_path / "target.json", tmp_path / "link.json"
    target.write_text("old\n")
    link.symlink_to(target.name)
    assert unwritable_file(link) is None
    assert atomic_write_text(link, "new\n") == link  # the path as given, not the file it resolves to
    assert link.is_symlink() and target.read_text() == "new\n"
    loop_a, loop_b = tmp_path / "loop_a", tmp_path / "loop_b"
    loop_a.symlink_to(loop_b.name)
    loop_b.symlink_to(loop_a.name)
    assert unwritable_file(loop_a) == NOT_REGULAR
    with pytest.raises(NotARegularFileError):
        atomic_write_text(loop_a, "x\n")
    assert loop_a.is_symlink() and loop_b.is_symlink()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.json", "loop_a", "loop_b", "pipe", "target.json"]


def test_solve_refuses_an_out_that_is_a_pipe_with_exit_2(tmp_path: Path) -> None:
    """``cbalab solve --out PIPE`` exits 2 naming --out and why, writes nothing, and leaves the pipe a pipe."""
    from cbalab.cli import main
    from cbalab.experiments.workload import generate_cost

    inst = tmp_path / "inst.json"
    generate_cost(5, 2, 0).save(inst)
    pipe = tmp_path / "out"
    os.mkfifo(pipe)
    assert main(["solve", str(inst), "--method", "cba", "--out", str(pipe)]) == 2
    assert stat.S_ISFIFO(pipe.lstat().st_mode)
