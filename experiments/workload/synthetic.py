"""The one front of the seeded instance generators: what ``cbalab generate`` and :func:`cbalab.generate` call.

Every parameter of :func:`~cbalab.experiments.workload.generate_cost` and
:func:`~cbalab.experiments.workload.generate_welfare` is a keyword of :func:`generate_instance` (and an
option of ``cbalab generate``), checked here so that a bad value is an InstanceError naming the parameter,
never an error from deep inside numpy.  A cost instance can be made in any integer variant of P1
(docs/model.md §4; experiments/workload/variants.py): whole datasets, blocks of ``block_gb``, bandwidth
sold in tiers of ``tier_fraction`` × Σ r_j, or a combination.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from typing import Any

from cbalab.experiments.workload.generate import DEFAULT_PRICES, generate_cost, generate_welfare
from cbalab.experiments.workload.variants import CONTINUOUS, with_variant
from cbalab.models.instance import MAX_COUNT, Instance, InstanceError

#: The parameters that only the welfare generator takes, with its defaults (generate_welfare's signature).
WELFARE_ONLY = {
    "utility_mix": "mixed",
    "budget_fraction": 0.5,
    "gpu_options": (1, 2, 4, 8),
    "gpu_fraction": 0.5,
    "alpha": 2.0,
}

#: The parameters that only cost instances take (the integer variants of P1).
COST_ONLY = {"variant": CONTINUOUS, "block_gb": None, "tier_fraction": None}


def whole(value: Any, name: str, *, minimum: int = 0, maximum: int | None = MAX_COUNT) -> int:
    """``value`` as an int (numpy integers too) in [minimum, maximum]; InstanceError naming ``name`` otherwise.

    A bool, a float (even 5.0) or a string is refused: a count or a seed is a whole number.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InstanceError(name, _shown(value), "must be a whole number")
    number = int(value)
    if number < minimum or (maximum is not None and number > maximum):
        span = f">= {minimum}" if maximum is None else f"from {minimum} to {maximum}"
        raise InstanceError(name, number, f"must be a whole number {span}")
    return number


def finite(value: Any, name: str, *, positive: bool = False) -> float:
    """``value`` as a finite float >= 0 (> 0 with ``positive``); InstanceError naming ``name`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InstanceError(name, _shown(value), "must be a number")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise InstanceError(name, number, f"must be a finite number {'> 0' if positive else '>= 0'}")
    return number


#: The largest price accepted, in $ per unit-hour: past it a replay's bill (up to 2^31 GPUs over 10^12 s of
#: trace) would overflow a double, and HiGHS cannot represent such coefficients anyway (README "optimal").
MAX_PRICE = 1e15


def price_triple(prices: Any, name: str = "prices") -> tuple[float, float, float]:
    """(p_g, p_c, p_b) per hour as three finite numbers from 0 to MAX_PRICE; InstanceError naming ``name``
    (or ``name[i]``) otherwise."""
    if isinstance(prices, str | bytes | Mapping) or not isinstance(prices, Sequence) or len(prices) != 3:
        raise InstanceError(name, _shown(prices), "must be three numbers: (gpu, cache, bandwidth) $ per hour")
    p_g, p_c, p_b = (finite(p, f"{name}[{i}]") for i, p in enumerate(prices))
    for i, p in enumerate((p_g, p_c, p_b)):
        if p > MAX_PRICE:
            raise InstanceError(f"{name}[{i}]", p, f"must be at most {MAX_PRICE:g} $ per hour")
    return p_g, p_c, p_b


def _shown(value: Any) -> Any:
    """A value as an error message can print it (numpy scalars and sequences as plain Python)."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, tuple):
        return list(value)
    return value if isinstance(value, str | int | float | list | dict | type(None)) else repr(value)


def generate_instance(
    kind: str,
    n_jobs: int,
    n_datasets: int,
    seed: int,
    *,
    skew: float = 1.0,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    prices: Sequence[float] = DEFAULT_PRICES,
    variant: str = CONTINUOUS,
    block_gb: float | None = None,
    tier_fraction: float | None = None,
    utility_mix: str | Mapping[str, float] | None = None,
    budget_fraction: float | None = None,
    gpu_options: Sequence[int] | None = None,
    gpu_fraction: float | None = None,
    alpha: float | None = None,
) -> Instance:
    """A seeded synthetic instance of ``kind`` "cost" (P1) or "welfare" (P2), every parameter checked by name.

    Both kinds: ``n_jobs`` jobs reading ``n_datasets`` datasets (log-normal sizes around 50 GB) chosen by
    Zipf(``skew``) popularity; a cache of ``cache_fraction`` of all dataset bytes; a bandwidth cap of
    ``bandwidth_fraction`` of the total demand (None: no cap); ``prices`` (p_g, p_c, p_b) in $ per
    GPU-hour, GB-hour of cache and (GB/s)-hour of remote IO.  The same seed gives the same instance.

    Cost only: ``variant`` is ``continuous`` or an integer variant of docs/model.md §4 (``dataset``,
    ``block``, ``tiers``, ``block+tiers``, ``dataset+tiers``); ``block_gb`` is the block size of a block
    variant (default 8 GB) and ``tier_fraction`` the bandwidth tier of a tiers variant as a fraction of
    Σ r_j (default 0.1).

    Welfare only (None: generate_welfare's default): ``utility_mix`` ("mixed", one shape of
    models.options.SHAPES, or {shape: share}), ``budget_fraction`` of the cost of running every job at its
    largest option on remote IO (0.5), ``gpu_options`` (1, 2, 4, 8), ``gpu_fraction`` of Σ_j (largest
    option) GPUs in the cluster (0.5) and the α of α-fair utilities, ``alpha`` (2).
    """
    if kind not in ("cost", "welfare"):
        raise InstanceError("kind", _shown(kind), "must be cost or welfare")
    kw: dict[str, Any] = {
        "skew": finite(skew, "skew"),
        "cache_fraction": finite(cache_fraction, "cache_fraction"),
        "bandwidth_fraction": None if bandwidth_fraction is None else finite(bandwidth_fraction, "bandwidth_fraction"),
        "prices": price_triple(prices),
    }
    jobs, datasets = whole(n_jobs, "jobs"), whole(n_datasets, "datasets", minimum=1)
    seed = whole(seed, "seed", maximum=None)
    welfare_kw = {"utility_mix": utility_mix, "budget_fraction": budget_fraction, "gpu_options": gpu_options}
    welfare_kw |= {"gpu_fraction": gpu_fraction, "alpha": alpha}
    if kind == "cost":
        given = next((k for k, v in welfare_kw.items() if v is not None), None)
        if given is not None:
            raise InstanceError(given, _shown(welfare_kw[given]), "is a parameter of welfare instances (kind welfare)")
        base = generate_cost(jobs, datasets, seed, **kw)
        return with_variant(base, variant, block_gb=block_gb, tier_fraction=tier_fraction)
    cost_kw = {"variant": variant, "block_gb": block_gb, "tier_fraction": tier_fraction}
    given = next((k for k, v in cost_kw.items() if v != COST_ONLY[k]), None)
    if given is not None:
        raise InstanceError(
            given, _shown(cost_kw[given]), "is a parameter of cost instances: the welfare problem is continuous"
        )
    for name in ("budget_fraction", "gpu_fraction"):
        if welfare_kw[name] is not None:
            kw[name] = finite(welfare_kw[name], name)
    if alpha is not None:
        kw["alpha"] = finite(alpha, "alpha", positive=True)
    if gpu_options is not None:
        if isinstance(gpu_options, str | bytes) or not isinstance(gpu_options, Sequence):
            raise InstanceError("gpu_options", _shown(gpu_options), "must be a list of GPU counts")
        kw["gpu_options"] = tuple(whole(g, f"gpu_options[{i}]", minimum=1) for i, g in enumerate(gpu_options))
    if utility_mix is not None:
        kw["utility_mix"] = utility_mix
    return generate_welfare(jobs, datasets, seed, **kw)
