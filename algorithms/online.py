"""The one protocol of online policies: ``decide(state, now) -> Allocation`` at every event of a replay.

A replay (experiments/replay.py) re-decides at every arrival, departure and
period tick (docs/model.md §6 for the cost problem P3, §6b for welfare over
time).  What the policy sees is a :class:`State`: the static problem of that
event as an :class:`~cbalab.models.instance.Instance` (the running jobs of the
cost problem, or the active jobs with their options now for the welfare
problem), the cache filled so far per dataset (warm-up, docs/model.md (6.1)),
and for the welfare problem the option each job holds now.

Every registered method is an online policy (algorithms/registry.py, field
``online``): a static method re-solved from scratch at every event is the
trivial implementation, :class:`Resolved`; a policy with a memory, such as
cba-keep (algorithms/cba_keep.py) or online AutoCBA
(algorithms/autocba/online.py), is a class made once per replay with the
replay's :class:`~cbalab.models.types.SolveOptions` and told every event in
time order.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from cbalab.models.evaluate import Allocation
from cbalab.models.instance import Instance
from cbalab.models.types import SolveOptions


@dataclass(frozen=True)
class State:
    """What an online policy sees at one event.

    ``instance`` is the static problem now: P1 of the running jobs
    (docs/model.md §4), possibly aggregated to one pseudo-job per dataset,
    or P2 of the active jobs with their options now (§5).  ``filled_gb`` is
    the cache filled per dataset (the targets when caches are instant).
    ``current`` (welfare only) is each job's option row in ``instance`` now,
    −1 while it waits or when its option is no longer offered.
    """

    instance: Instance
    filled_gb: np.ndarray
    current: np.ndarray | None = None


class OnlinePolicy(Protocol):
    """A policy the replay calls at every event, in time order, with the state then."""

    def decide(self, state: State, now: float) -> Allocation:
        """The allocation of ``state.instance`` at time ``now`` (seconds)."""
        ...


class Resolved:
    """The trivial online policy: the static method ``function`` re-solved on every event's instance.

    It keeps no memory, so it answers each event as if it were the first
    (re-solved CBA of docs/model.md §6, the GPU schedulers of §7).
    """

    def __init__(self, function: Callable[[Instance, SolveOptions], Allocation], options: SolveOptions) -> None:
        self.function = function
        self.options = options

    def decide(self, state: State, now: float) -> Allocation:
        """The static method's answer on ``state.instance``; the time and the filled cache do not matter to it."""
        return self.function(state.instance, self.options)
