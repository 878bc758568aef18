"""The one typed result of every method: :class:`Allocation`, its status, claims and declared facts.

Every method of cbalab returns an :class:`Allocation` (README.md (Layout), "One referee"); models/evaluate.py
scores it and models/certify.py decides whether its ``optimal`` stands (docs/model.md §8).  What a method
knows besides its arrays is declared here, one small frozen record per kind, so that a reader's attribute
is checked by mypy instead of looked up by key in a dict: the certificate (:class:`Certificate`), the
exact solvers' run facts (:class:`MilpFacts`), and the method's own facts (:data:`MethodFacts`).  HiGHS's
answer (models/solve.py's ``Outcome``) is a solver-side record that models/solve.py turns into this one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from cbalab.models.types import Status


@dataclass(frozen=True)
class Certificate:
    """What the certification step (models/certify.py, docs/model.md (8.2)) weighed: the method's claim, the
    referee's score, the bound it was given (None: none) and the tolerance the two had to meet within."""

    claimed: Status
    score: float
    bound: float | None
    tolerance: float


@dataclass(frozen=True)
class MilpFacts:
    """How an exact solve of P2 or P2s ran (models/solve.py): its form and timings, HiGHS's nodes, the slices.

    ``form`` is "arrays", "pyomo" or "sliced" (proofs/welfare_milp_forms.md, F1 and F4); seconds are wall
    seconds of the build, the pass to HiGHS, HiGHS's run and the slices' first LP; ``slices`` the record of
    each GPU-count slice (Theorem F4).  ``relaxation_objective`` is the P2s relaxation's optimum (Theorem F3)
    and ``p2`` the facts of the no-stall solve that realised it, if one did.
    """

    form: str
    start_given: bool = False
    start_fits: bool | None = None
    build_seconds: float | None = None
    pass_seconds: float | None = None
    solve_seconds: float | None = None
    lp_seconds: float | None = None
    nodes: int | None = None
    n_hat: float | None = None
    slices: tuple[Mapping[str, Any], ...] = ()
    relaxation_objective: float | None = None
    p2: MilpFacts | None = None

    @classmethod
    def of(cls, facts: Mapping[str, Any], form: str) -> MilpFacts:
        """The record of the run facts the solver side collects as it goes (models/solve.py), ``form`` if unnamed."""
        return cls(
            form=str(facts.get("form", form)),
            start_given=bool(facts.get("start_given", False)),
            start_fits=facts.get("start_fits"),
            build_seconds=facts.get("build_seconds"),
            pass_seconds=facts.get("pass_seconds"),
            solve_seconds=facts.get("solve_seconds"),
            lp_seconds=facts.get("lp_seconds"),
            nodes=facts.get("nodes"),
            n_hat=facts.get("n_hat"),
            slices=tuple(facts.get("slices", ())),
        )


@dataclass(frozen=True)
class BandwidthRepair:
    """The factor ≤ 1 an exact welfare answer's bandwidth was scaled by into B and the budget (models/solve.py)."""

    factor: float


@dataclass(frozen=True)
class IntegerFacts:
    """Integer CBA (algorithms/cba_integer.py): its variant and the a-priori additive bound on cost − optimum that
    the variant's theorem gives on this instance (proofs/cba_integer_gap.md; None: none applies)."""

    variant: str
    gap_bound: float | None


@dataclass(frozen=True)
class KeepFacts:
    """CBA-keep (algorithms/cba_keep.py): the GB kept in the cache beyond CBA's own choice."""

    kept_gb: float


@dataclass(frozen=True)
class CacheRule:
    """A cache baseline of P1 (algorithms/baselines/): CoorDL's private share ``alpha``, Cache-all's fill
    ``order``, Quiver's ``judged`` unit; None where the rule has no such choice."""

    alpha: float | None = None
    order: str | None = None
    judged: str | None = None


@dataclass(frozen=True)
class IoFeeding:
    """An IO-unaware GPU scheduler fed by a cache policy (algorithms/baselines/io_unaware.py, docs/model.md §7).

    ``io_factor`` is the one factor its unstalled bandwidth was scaled by (1: no job stalls);
    ``bill_per_hour`` what GPUs, cache and the unstalled bandwidth ``bandwidth_need_gbps`` would cost; the
    naive rule's GPU cap and rounds and the oracle envelope's ``split`` (None: the naive answer) when set.
    """

    io_factor: float
    cache_policy: str
    bill_per_hour: float
    bandwidth_need_gbps: float
    split: float | None = None
    gpu_cap: int | None = None
    caps_tried: int | None = None


@dataclass(frozen=True)
class SearchFacts:
    """AutoCBA (algorithms/autocba/driver.py): which step found the answer and the certificate's multipliers
    (μ budget, ν GPUs, λ cache, β bandwidth, Theorem D of proofs/autocba_certificate.md; None: not certified)."""

    source: str
    multipliers: tuple[float, float, float, float] | None = None


@dataclass(frozen=True)
class OnlineFacts:
    """Online AutoCBA (algorithms/autocba/online.py): whether the full re-optimisation ran and was adopted, and
    the local moves made."""

    full_reopt: bool
    full_reopt_improved: bool
    moves: int


#: The facts a method declares about its own answer, one kind per method family.
MethodFacts = BandwidthRepair | IntegerFacts | KeepFacts | CacheRule | IoFeeding | SearchFacts | OnlineFacts


@dataclass
class Allocation:
    """What a method decides, plus its (untrusted) claim about it.

    ``gpus`` per job, ``cache_gb`` per dataset (occupied, paid capacity),
    ``bandwidth_gbps`` per job, all by position.  ``provisioned_gbps`` is the
    total bandwidth bought under tiers (None: let the referee round Σ b_j up
    to whole tiers).  ``status`` is the method's claim (``optimal`` only if
    proven, models/certify.py), ``objective`` the method's own value of its
    objective (HiGHS's incumbent, AutoCBA's Σ U; the referee's score is what
    is reported), ``bound`` a proven bound on the optimum (lower for cost,
    upper for welfare) or None, ``reason`` why the method found no allocation
    or why its claim is what it is.  When ``status`` is ``infeasible`` or
    ``error`` the arrays may be None.  ``time_share`` is the share of the time
    each job runs at its ``gpus`` (docs/model.md §5, "Time sharing"; None:
    every job runs all the time); only the welfare problem accepts shares
    below 1.  ``certificate``, ``milp`` and ``facts`` are the declared extras.
    """

    gpus: np.ndarray | None
    cache_gb: np.ndarray | None
    bandwidth_gbps: np.ndarray | None
    provisioned_gbps: float | None = None
    status: Status = Status.FEASIBLE
    objective: float | None = None
    bound: float | None = None
    reason: str | None = None
    time_share: np.ndarray | None = None
    certificate: Certificate | None = None
    milp: MilpFacts | None = None
    facts: MethodFacts | None = None

    def __post_init__(self) -> None:
        """A status given as its string (the result JSON's value) becomes the :class:`Status` it names."""
        self.status = Status(self.status)

    @classmethod
    def none(cls, status: Status, reason: str, bound: float | None = None) -> Allocation:
        """An answer without an allocation (``infeasible`` or ``error``, or a time limit with no incumbent)."""
        return cls(None, None, None, status=status, reason=reason, bound=bound)

    @property
    def has_allocation(self) -> bool:
        """True when the method returned arrays to score."""
        return self.gpus is not None

    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(gpus, cache_gb, bandwidth_gbps), for a reader that needs them; ValueError naming the status if none."""
        if self.gpus is None or self.cache_gb is None or self.bandwidth_gbps is None:
            raise ValueError(f"the answer has no allocation ({self.status}: {self.reason})")
        return self.gpus, self.cache_gb, self.bandwidth_gbps
