"""A toy benchmark for tests/test_cli.py: ``measure`` follows experiments/benchmarks.py's contract."""

from __future__ import annotations

from typing import Any


def measure(*, values: tuple[float, ...] = (1.0, 2.0), limit: float = 10.0, label: str | None = None) -> dict[str, Any]:
    """Sum ``values``; ``ok`` says whether the sum stays within ``limit`` (so a test can see exit 1)."""
    total = sum(values)
    return {"total": total, "label": label, "ok": total <= limit}
