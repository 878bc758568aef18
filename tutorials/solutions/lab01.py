"""Solutions to the exercises of tutorials/01_caching_or_bandwidth.ipynb.

Each function derives a number by hand (the formula is in its body, from Theorem 1 of
proofs/cba_optimality.md) and computes the same thing with the code; tests/test_tutorials.py checks that
they agree.  Only ``import cbalab`` (+ pandas) is used, as in the notebook.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

import cbalab
from cbalab.examples import TOY_PRICES, toy_cluster, toy_datasets, toy_jobs

P_G, P_C, P_B = TOY_PRICES
SIZE = {"imagenet-1k": 147.0, "coco-2017": 18.0, "librispeech-960h": 59.3}
DEMAND = {"imagenet-1k": 0.60, "coco-2017": 0.18, "librispeech-960h": 0.09}


class Check(NamedTuple):
    """A number derived by hand and the same number from the code."""

    by_hand: float
    by_code: float


def _cache(inst: cbalab.Instance, dataset: str) -> float:
    frame = cbalab.solve(inst, "cba").datasets_frame().set_index("dataset")
    return float(frame.loc[dataset, "cache_gb"])


def exercise1_threshold_price() -> Check:
    """ImageNet is cached while p_b ρ > p_c, so p_c* = p_b R / d = 9 × 0.6 / 147 ≈ 0.0367 $/GB-h.

    By code: the largest p_c (bisection on the solver's answer) at which CBA still caches ImageNet.
    """
    by_hand = P_B * DEMAND["imagenet-1k"] / SIZE["imagenet-1k"]
    lo, hi = P_C, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if _cache(toy_cluster(price_cache=mid), "imagenet-1k") > 0:
            lo = mid
        else:
            hi = mid
    return Check(by_hand, lo)


def exercise2_partial_cache() -> tuple[Check, Check]:
    """C = 100 GB: the ρ-order is COCO (0.01), ImageNet (0.0041), so COCO (18 GB) whole and ImageNet 100 − 18 = 82 GB.

    ImageNet is the one cut because it comes last among the profitable datasets in the ρ-order (Case B).
    Second check: the certificate λ = p_b ρ_ImageNet − p_c makes the bound equal to the cost (bound − cost = 0).
    """
    inst = toy_cluster(cache_gb=100.0)
    res = cbalab.solve(inst, "cba")
    assert res.objective is not None and res.bound is not None
    return Check(100.0 - SIZE["coco-2017"], _cache(inst, "imagenet-1k")), Check(0.0, res.bound - res.objective)


def exercise3_forced_cache() -> Check:
    """B = 0.05 GB/s: LibriSpeech's remote IO 0.09 (1 − c/59.3) must drop to 0.05, so c = 59.3 × 0.04 / 0.09 GB.

    (ImageNet and COCO are cached whole as before and read nothing remotely.)
    """
    by_hand = SIZE["librispeech-960h"] * (DEMAND["librispeech-960h"] - 0.05) / DEMAND["librispeech-960h"]
    return Check(by_hand, _cache(toy_cluster(bandwidth_gbps=0.05), "librispeech-960h"))


def exercise4_smallest_cap() -> tuple[Check, str]:
    """C = 100 GB: the best the cache can do is the ρ-ordered fill (COCO whole, 82 GB of ImageNet), which leaves
    0.6 × (1 − 82/147) + 0.09 GB/s of remote IO: the smallest feasible B (Theorem 1 (i)).

    By code: the remote bandwidth of CBA's answer at C = 100 and B = that value; and the status just below it.
    """
    by_hand = DEMAND["imagenet-1k"] * (1 - 82.0 / SIZE["imagenet-1k"]) + DEMAND["librispeech-960h"]
    at = cbalab.solve(toy_cluster(cache_gb=100.0, bandwidth_gbps=by_hand), "cba")
    below = cbalab.solve(toy_cluster(cache_gb=100.0, bandwidth_gbps=0.99 * by_hand), "cba")
    return Check(by_hand, float(at.jobs_frame()["bandwidth_gbps"].sum())), str(below.status)


def exercise5_only_demand_matters() -> Check:
    """Merging resnet50 and vit-b16 into one 0.6 GB/s job keeps every R_k, hence every cache decision (Theorem 1
    depends on the jobs only through R_k).  Check: the largest change of any dataset's cache (0 by hand)."""
    jobs = toy_jobs()
    merged = pd.concat(
        [
            pd.DataFrame([{"id": "imagenet-pair", "dataset": "imagenet-1k", "gpus": 16, "io_gbps": 0.6}]),
            jobs[jobs["dataset"] != "imagenet-1k"],
        ]
    )
    inst = cbalab.build_instance(merged, toy_datasets(), cache_gb=250.0, prices=TOY_PRICES, gpus=32)
    a = cbalab.solve(inst, "cba").datasets_frame()["cache_gb"]
    b = cbalab.solve(toy_cluster(), "cba").datasets_frame()["cache_gb"]
    return Check(0.0, float((a - b).abs().max()))
