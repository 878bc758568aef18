"""Small shared types of cbalab that carry no solver: statuses, problems, and the options every method call receives."""

from __future__ import annotations

import math
import numbers
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

    def __post_init__(self) -> None:
        """InstanceError naming the field for a value no method could honour: a time limit that is not a finite
        number of seconds > 0 (None: none), a gap that is not a finite number ≥ 0 (a NaN gap let a time-limited
        answer pass as within it), a thread count that is not a whole number ≥ 1, a cache policy that is not a name.
        """
        from cbalab.models.instance import InstanceError

        def number(x: object) -> bool:
            return isinstance(x, numbers.Real) and not isinstance(x, bool) and math.isfinite(x)

        if self.time_limit is not None and not (number(self.time_limit) and self.time_limit > 0):
            raise InstanceError("time_limit", self.time_limit, "must be a finite number of seconds > 0, or None")
        if not (number(self.mip_gap) and self.mip_gap >= 0):
            raise InstanceError("mip_gap", self.mip_gap, "must be a finite number >= 0")
        whole = isinstance(self.threads, numbers.Integral) and not isinstance(self.threads, bool)
        if not (whole and self.threads >= 1):
            raise InstanceError("threads", self.threads, "must be a whole number >= 1")
        if self.cache_policy is not None and not isinstance(self.cache_policy, str):
            raise InstanceError("cache_policy", self.cache_policy, "must be a method's name or None")
