"""The integer variants of P1 (docs/model.md §4) and the seeded instances that sweep them.

A variant fixes the cache granularity (whole datasets, blocks, continuous) and
whether bandwidth is sold in tiers; :func:`with_variant` turns a continuous
cost instance into one (``cbalab generate --variant``), and
:func:`variant_instance` turns seed i into a generate_cost instance of that
variant with swept sizes, prices, caps, block and tier sizes.  The integer-gap
measurement (experiments/runs/optimality.py) and the tests of CBA's roundings
both draw from here.
"""

from __future__ import annotations

import math
import numbers

from cbalab.experiments.workload.generate import DEFAULT_PRICES, generate_cost
from cbalab.models.instance import Instance, InstanceError, check

#: The name of P1 with continuous cache and bandwidth (no integer variant).
CONTINUOUS = "continuous"

#: variant name -> (cache granularity, bandwidth sold in tiers?)
VARIANTS = {
    "dataset": ("dataset", False),
    "block": ("block", False),
    "tiers": ("continuous", True),
    "block+tiers": ("block", True),
    "dataset+tiers": ("dataset", True),
}

#: The block size and the bandwidth tier (as a fraction of Σ r_j) of :func:`with_variant` when none is given.
DEFAULT_BLOCK_GB = 8.0
DEFAULT_TIER_FRACTION = 0.1

#: Swept parameters (instance i takes entry i mod len of each, with co-prime lengths so they mix).
CACHE_PRICE_SCALES = (0.1, 1.0, 10.0, 30.0, 100.0)
BANDWIDTH_FRACTIONS = (None, 0.7, None, 0.9)
CACHE_FRACTIONS = (0.05, 0.2, 0.5)
BLOCK_GB = (1.0, 8.0, 32.0, 128.0, 512.0, 4.0, 16.0)
TIER_FRACTIONS = (0.02, 0.1, 0.3, 0.05, 0.2, 0.5, 0.01, 0.15, 0.4, 1.0, 0.07)


def variant_instance(variant: str, i: int, n_jobs: int | None = None, n_datasets: int | None = None) -> Instance:
    """Instance i of ``variant``: generate_cost(seed=i) with swept sizes and prices, the variant set by replace.

    Sizes default to 5-40 jobs and 2-12 datasets (by i); the block size is
    BLOCK_GB[i mod 7] GB and the tier TIER_FRACTIONS[i mod 11] of Σ r_j.
    """
    granularity, tiers = VARIANTS[variant]
    p_g, p_c, p_b = DEFAULT_PRICES
    base = generate_cost(
        n_jobs if n_jobs is not None else 5 + i % 36,
        n_datasets if n_datasets is not None else 2 + (i // 3) % 11,
        seed=i,
        cache_fraction=CACHE_FRACTIONS[i % len(CACHE_FRACTIONS)],
        bandwidth_fraction=BANDWIDTH_FRACTIONS[i % len(BANDWIDTH_FRACTIONS)],
        prices=(p_g, p_c * CACHE_PRICE_SCALES[i % len(CACHE_PRICE_SCALES)], p_b),
    )
    return with_variant(
        base,
        variant,
        block_gb=BLOCK_GB[i % len(BLOCK_GB)] if granularity == "block" else None,
        tier_fraction=TIER_FRACTIONS[i % len(TIER_FRACTIONS)] if tiers else None,
    )


def with_variant(
    inst: Instance, variant: str, *, block_gb: float | None = None, tier_fraction: float | None = None
) -> Instance:
    """``inst`` (a cost instance, continuous) turned into ``variant``: ``continuous`` or a name of VARIANTS.

    A block variant caches whole blocks of ``block_gb`` GB (default DEFAULT_BLOCK_GB); a tiers variant sells
    bandwidth in tiers of ``tier_fraction`` × Σ r_j (default DEFAULT_TIER_FRACTION; continuous bandwidth
    when Σ r_j = 0, which leaves nothing to buy).  InstanceError naming ``variant``, ``block_gb`` or
    ``tier_fraction`` when one is unknown, not finite and > 0, or given to a variant that has no use for it.
    """
    if variant != CONTINUOUS and variant not in VARIANTS:
        known = ", ".join([CONTINUOUS, *VARIANTS])
        raise InstanceError("variant", variant, f"must be one of {known}")
    granularity, tiers = VARIANTS.get(variant, (CONTINUOUS, False))
    for name, value, used in (("block_gb", block_gb, granularity == "block"), ("tier_fraction", tier_fraction, tiers)):
        if value is None:
            continue
        if not used:
            raise InstanceError(name, value, f"has no use in the {variant} variant")
        if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (math.isfinite(value) and value > 0):
            raise InstanceError(name, value, "must be a finite number > 0")
    total = float(inst.job_io_gbps.sum())
    tier = DEFAULT_TIER_FRACTION if tier_fraction is None else float(tier_fraction)
    return check(
        inst.replace(
            cache_granularity=granularity,
            block_gb=(DEFAULT_BLOCK_GB if block_gb is None else float(block_gb)) if granularity == "block" else None,
            bandwidth_step_gbps=tier * total if tiers and total > 0 else None,
        )
    )
