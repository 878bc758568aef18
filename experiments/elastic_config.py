"""What one elastic replay is asked (experiments/elastic.py): the cluster, the budget and the policy.

Its :meth:`ElasticConfig.check` refuses a setting out of range, naming it (an InstanceError: exit 2 on the
command line), before the replay starts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from cbalab.algorithms import registry
from cbalab.experiments.workload import DEFAULT_PRICES
from cbalab.models.instance import InstanceError


@dataclass(frozen=True)
class ElasticConfig:
    """The cluster, the budget and the policy of one elastic replay.

    ``budget_per_hour`` wins over ``budget_fraction``, which is a fraction of
    the reference spend (experiments.workload.elastic.reference_spend: the
    peak spend rate of running every job at its reference option from its
    submission on remote IO).  ``cache_policy`` feeds a GPU scheduler (None:
    ``silod``); a policy that sets its caches itself (``autocba``, ``lp``, ...)
    takes none.  ``reopt_gap`` is online AutoCBA's trigger for a full
    re-optimisation (the policy's ``SolveOptions.mip_gap``); ``referee``
    scores every re-decision with models.evaluate.
    """

    policy: str = "autocba"
    cache_policy: str | None = None
    gpus: int = 768
    cache_gb: float = 500.0
    bandwidth_gbps: float = math.inf
    prices: tuple[float, float, float] = DEFAULT_PRICES
    budget_per_hour: float | None = None
    budget_fraction: float = 0.5
    restart_delay_s: float = 0.0
    period_s: float | None = None
    warmup: bool = True
    referee: bool = True
    reopt_gap: float = 0.01
    seed: int = 0
    progress: bool = False

    def check(self) -> None:
        """InstanceError naming the setting when a value is out of range."""
        try:
            method = registry.get("welfare", self.policy)
        except KeyError as e:
            raise InstanceError("policy", self.policy, e.args[0]) from None
        if self.cache_policy is not None:
            if not method.takes_cache_policy:
                raise InstanceError(
                    "cache_policy",
                    self.cache_policy,
                    f"{self.policy} sets its caches itself (docs/model.md §5); a cache policy feeds a GPU scheduler",
                )
            if self.cache_policy not in registry.cache_policies():
                raise InstanceError("cache_policy", self.cache_policy, f"must be one of {registry.cache_policies()}")
        if self.gpus < 1:
            raise InstanceError("gpus", self.gpus, "must be >= 1")
        for name, value in (
            ("cache_gb", self.cache_gb),
            ("budget_fraction", self.budget_fraction),
            ("restart_delay_s", self.restart_delay_s),
            ("reopt_gap", self.reopt_gap),
            *zip(("price_gpu", "price_cache", "price_bandwidth"), self.prices),
        ):
            if not (math.isfinite(value) and value >= 0):
                raise InstanceError(name, value, "must be finite and >= 0")
        if self.budget_per_hour is not None and not (self.budget_per_hour >= 0):
            raise InstanceError("budget_per_hour", self.budget_per_hour, "must be >= 0")
        if not (self.bandwidth_gbps >= 0):
            raise InstanceError("bandwidth_gbps", self.bandwidth_gbps, "must be >= 0")
        if self.period_s is not None and not (math.isfinite(self.period_s) and self.period_s > 0):
            raise InstanceError("period_s", self.period_s, "must be finite and > 0")
