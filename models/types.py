"""Small shared types of cbalab that carry no solver: the options every method call receives."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SolveOptions:
    """How to call a method: ``time_limit`` in seconds (None: none), ``mip_gap`` relative (0: exact).

    Exact methods hand these to HiGHS; a fast method may ignore them.
    """

    time_limit: float | None = None
    mip_gap: float = 0.0
    threads: int = 1
