"""Small shared types of cbalab that carry no solver: statuses, problems, and the options every method call receives."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class Status(StrEnum):
    """A method's claim about its answer (docs/model.md §6); the values are the strings of the result JSON."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    TIME_LIMIT = "time_limit"
    INFEASIBLE = "infeasible"
    ERROR = "error"


class Problem(StrEnum):
    """The two problems of docs/model.md: IO cost with fixed GPUs (P1, §4) and welfare under a budget (P2, §5)."""

    COST = "cost"
    WELFARE = "welfare"


@dataclass(frozen=True)
class SolveOptions:
    """How to call a method: ``time_limit`` in seconds (None: none), ``mip_gap`` relative (0: exact).

    Exact methods hand ``time_limit``, ``mip_gap`` and ``threads`` to HiGHS;
    online AutoCBA (algorithms/autocba/online.py) re-optimises from scratch
    when its certified gap exceeds ``mip_gap``; a GPU scheduler feeds its GPUs
    with the registered cache policy ``cache_policy`` (None: its default,
    ``silod``).  A fast method may ignore every field.
    """

    time_limit: float | None = None
    mip_gap: float = 0.0
    threads: int = 1
    cache_policy: str | None = None
