"""Test configuration: hypothesis profiles chosen by CBALAB_HYPOTHESIS_PROFILE (dev, ci, thorough)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("dev", max_examples=60, deadline=None)
settings.register_profile("ci", max_examples=150, deadline=None, print_blob=True, derandomize=True)
settings.register_profile("thorough", max_examples=10_000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("CBALAB_HYPOTHESIS_PROFILE", "dev"))


@pytest.fixture
def paper_copy(tmp_path: Path) -> Path:
    """A copy of paper/ (sources, results, generated files, claims, the PDF) without its build folder, for the
    paper tests that edit it (tests/test_paper.py, tests/test_io_cost_grid_and_paper_check.py)."""
    dest = tmp_path / "paper"
    shutil.copytree(Path(__file__).resolve().parent.parent / "paper", dest, ignore=shutil.ignore_patterns("build"))
    return dest
