"""Named teaching instances: small clusters whose answers can be worked out by hand.

Each function returns a fresh, validated :class:`cbalab.models.instance.Instance`
with named datasets and jobs, and its docstring says what the instance
teaches and, where it is cheap to state, its optimum (checked by
tests/test_examples.py against CBA and the exact MILP, through the referee).

The prices are chosen so that the interesting decision happens: the caching
threshold p_c / p_b of docs/model.md (4.7) falls *between* the IO densities
of the datasets, so some datasets are worth caching and others are not, and
the answer moves when the price ratio moves.  Units are those of
docs/model.md §2: GB, GB/s, $ per GPU-hour, per GB-hour of cache and per
(GB/s)-hour of remote bandwidth.

* :func:`toy_cluster`: P1 (docs/model.md §4) on 3 datasets and 6 jobs.
* :func:`shared_dataset`: why sharing matters (docs/model.md §3): jobs that
  together justify a cache none of them justifies alone.
* :func:`threshold_demo`: Theorem 1's threshold rule (proofs/cba_optimality.md)
  at any price ratio.
* :func:`elastic_toy`: P2 (docs/model.md §5) with a budget that binds.
* :func:`mccormick_toy`: a P2 model small enough to print, for McCormick's rows (proofs/mccormick_exact.md).
* :func:`greedy_trap`: Counterexample 1 of proofs/autocba_guarantee.md, where a naive greedy fails.
* :func:`small_trace`: a 24-job, six-hour trace for replays (docs/model.md §6).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from cbalab.api import build_instance
from cbalab.models.instance import Instance, build

#: The prices of toy_cluster and shared_dataset: $/GPU-h, $/GB-h of cache, $/(GB/s)-h of bandwidth.
#: Their ratio p_c / p_b = 0.001 /s: a cached GB pays for itself when it saves more than 1 MB/s of remote IO.
TOY_PRICES = (2.0, 0.001, 1.0)


def toy_cluster(*, cache_gb: float = 300.0, prices: tuple[float, float, float] = TOY_PRICES) -> Instance:
    """Three datasets, six named jobs with fixed GPUs: the cost problem P1 (docs/model.md §4) at a glance.

    =========== ======= ==============================================
    dataset     size GB jobs (GPUs, GB/s)
    =========== ======= ==============================================
    openwebtext      40 gpt2-small (8, 0.004), gpt2-medium (16, 0.003)
    imagenet        140 resnet50-a (8, 0.30), resnet50-b (4, 0.15),
                        vit-b16 (8, 0.20)
    kinetics        450 slowfast (16, 0.90)
    =========== ======= ==============================================

    Demands R_k (docs/model.md (3.4)) are 0.007, 0.65 and 0.90 GB/s, so the IO
    densities ρ_k = R_k / d_k (4.5) are about 1.75e-4, 4.6e-3 and 2.0e-3 per
    second.  At the default prices the threshold p_c / p_b (4.7) is 1e-3: it
    separates the image and video datasets (worth caching) from the text
    corpus (not worth it: its jobs read a few MB/s).

    **What it teaches.**  With C = 300 GB the cache is the binding limit:
    CBA caches imagenet whole (140 GB, the densest), the remaining 160 GB of
    kinetics, and nothing of openwebtext, although it would fit in a larger
    cache.  One dataset ends up partly cached, as Theorem 1 says.  The
    optimum, IO cost only (cache + bandwidth), is

        0.001·300 + 1.0·(0.90·(1 − 160/450) + 0.007) = 0.887 $/h

    against 1.557 $/h without a cache.  A cache-first policy that follows job
    order caches the text corpus first (its jobs are listed first) and pays
    for it; raise ``cache_gb`` to 700 and the price-blind SiloD-like policy
    caches openwebtext too, at a loss.  Sweep the price ratio across 1.75e-4,
    2e-3 and 4.6e-3 to watch datasets enter and leave the cache.
    """
    names = ("openwebtext", "imagenet", "kinetics")
    jobs = (
        ("gpt2-small", "openwebtext", 8, 0.004),
        ("gpt2-medium", "openwebtext", 16, 0.003),
        ("resnet50-a", "imagenet", 8, 0.30),
        ("resnet50-b", "imagenet", 4, 0.15),
        ("vit-b16", "imagenet", 8, 0.20),
        ("slowfast", "kinetics", 16, 0.90),
    )
    return build(
        dataset_size_gb=np.array([40.0, 140.0, 450.0]),
        dataset_ids=names,
        job_ids=tuple(j[0] for j in jobs),
        job_dataset=np.array([names.index(j[1]) for j in jobs]),
        job_gpus=np.array([j[2] for j in jobs]),
        job_io_gbps=np.array([j[3] for j in jobs]),
        cache_gb=cache_gb,
        prices=prices,
    )


def shared_dataset(*, readers: int = 4, prices: tuple[float, float, float] = TOY_PRICES) -> Instance:
    """One 20 GB dataset read by ``readers`` jobs of 0.01 GB/s each, beside one 50 GB dataset read by one job.

    **What it teaches.**  Caching is judged per dataset, not per job
    (docs/model.md §3): one cached copy serves every reader.  Each reader of
    ``coco`` alone has density 0.01 / 20 = 5e-4 per second, below the
    threshold p_c / p_b = 1e-3, so no single job justifies caching it, and a
    per-job policy such as CoorDL (private slices) caches nothing.  Together
    the four readers have ρ = 2e-3 > 1e-3, and the optimum caches ``coco``
    whole.  ``laion-subset`` (50 GB, one job at 0.02 GB/s, ρ = 4e-4) stays
    remote.  With the default four readers and the default prices the optimal
    IO cost is

        0.001·20 + 1.0·0.02 = 0.040 $/h   (no cache: 0.060 $/h).

    With ``readers=1`` the same reasoning says: cache nothing (cost 0.030 $/h).
    The cache (100 GB) never binds.
    """
    if readers < 1:
        raise ValueError(f"readers: must be >= 1, got {readers}")
    jobs = [(f"detector-{i + 1}", 0, 0.01) for i in range(readers)] + [("clip-finetune", 1, 0.02)]
    return build(
        dataset_size_gb=np.array([20.0, 50.0]),
        dataset_ids=("coco", "laion-subset"),
        job_ids=tuple(j[0] for j in jobs),
        job_dataset=np.array([j[1] for j in jobs]),
        job_gpus=np.full(len(jobs), 2),
        job_io_gbps=np.array([j[2] for j in jobs]),
        cache_gb=100.0,
        prices=prices,
    )


#: Densities of threshold_demo's datasets, per second (one job per dataset reading d_k ρ_k GB/s).
THRESHOLD_DENSITIES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2)


def threshold_demo(price_ratio: float = 2e-3) -> Instance:
    """Five 100 GB datasets with IO densities 1e-4 … 1e-2 per second, at cache price = ``price_ratio`` × p_b.

    **What it teaches.**  Theorem 1 (proofs/cba_optimality.md): with room for
    everything (C = 500 GB) and no bandwidth cap, the optimum caches exactly
    the datasets whose density exceeds p_c / p_b (docs/model.md (4.7)),
    whole, and nothing else.  With p_b = 1 $/(GB/s)-h and p_c =
    ``price_ratio``, the optimal IO cost is (4.6)

        Σ_k R_k − Σ_{ρ_k > ratio} d_k (ρ_k − ratio)   $/h,

    with R_k = 100 ρ_k GB/s (Σ_k R_k = 1.44).  At the default ratio 2e-3 the
    two densest datasets are cached and the cost is
    1.44 − 100·(0.003 − 0.002) − 100·(0.01 − 0.002) = 0.54 $/h.  Plot the cached fraction of
    each dataset against ``price_ratio`` to draw the threshold.  A dataset
    exactly at the threshold is indifferent: caching it or not costs the same.
    """
    if not (math.isfinite(price_ratio) and price_ratio >= 0):
        raise ValueError(f"price_ratio: must be a finite number >= 0, got {price_ratio}")
    rho = np.array(THRESHOLD_DENSITIES)
    size = np.full(rho.size, 100.0)
    return build(
        dataset_size_gb=size,
        dataset_ids=tuple(f"rho={r:g}" for r in rho),
        job_ids=tuple(f"job-{k}" for k in range(rho.size)),
        job_dataset=np.arange(rho.size),
        job_gpus=np.full(rho.size, 1),
        job_io_gbps=size * rho,
        cache_gb=float(size.sum()),
        prices=(1.0, price_ratio, 1.0),
    )


def elastic_toy(*, budget_per_hour: float = 14.0) -> Instance:
    """Five jobs that may run at 1, 2 or 4 GPUs, on two datasets: the welfare problem P2 (docs/model.md §5).

    Each job's option table lists (GPUs, GB/s consumed, utility per hour); the
    utilities grow more slowly than the GPUs (diminishing returns).  The
    cluster has 12 GPUs and 100 GB of cache: less than ``imagenet`` (140 GB).
    GPUs cost 1 $/h, cache 0.002 $/GB-h and remote bandwidth 20 $/(GB/s)-h,
    so feeding a 4-GPU ResNet from remote storage (0.18 GB/s) costs almost as
    much as its GPUs.

    **What it teaches.**  The default budget of 14 $/h binds: running every
    job at 4 GPUs would need 20 GPUs and far more money, so the operator must
    choose whom to run and how wide, and every GB/s not cached is money not
    spent on GPUs.  The three ImageNet jobs share one cache, so caching
    ``imagenet`` (as far as C allows) makes all three cheaper to feed at once;
    an IO-unaware GPU scheduler picks GPUs first and then finds the budget
    short for the data.

    **Known optimum** (the MILP, HiGHS at gap 0): welfare 78 utility/h, with
    resnet50 and vit-b16 at 4 GPUs, efficientnet at 1, wav2vec2 at 2 and
    conformer not running: 11 of the 12 GPUs.  Fed at least cost (imagenet's
    100 GB cached) it spends 13.85 $/h (11 on GPUs, 2.85 on cache and
    bandwidth); the 0.15 $/h left buys no further GPU with its data, while
    15 $/h buys welfare 79.  AutoCBA finds a welfare-78
    answer too, with a certificate of about 78.74 (so it can prove only a
    gap below 1%).  The IO-unaware schedulers, blind to IO and to utilities
    and cut to their own bill, feed every job they run: gavel-tput and optimus
    run all five jobs at 2 GPUs (welfare 69), gavel-fair time-shares 11 GPUs
    equally (each job at 4 GPUs 55% of the time, 64.9); the utility-greedy
    ablation, which reads the utilities, finds the optimum 78.  Raise the
    budget to watch the GPU limit take over.
    """
    datasets = ("imagenet", "librispeech")
    jobs = (
        ("resnet50", "imagenet", ((1, 0.05, 10.0), (2, 0.095, 18.0), (4, 0.18, 30.0))),
        ("vit-b16", "imagenet", ((1, 0.03, 8.0), (2, 0.058, 15.0), (4, 0.11, 26.0))),
        ("efficientnet", "imagenet", ((1, 0.04, 6.0), (2, 0.078, 11.0), (4, 0.15, 19.0))),
        ("wav2vec2", "librispeech", ((1, 0.02, 9.0), (2, 0.038, 16.0), (4, 0.07, 27.0))),
        ("conformer", "librispeech", ((1, 0.015, 5.0), (2, 0.029, 9.0), (4, 0.055, 16.0))),
    )
    rows = [row for _, _, table in jobs for row in table]
    ptr = np.concatenate([[0], np.cumsum([len(table) for _, _, table in jobs])])
    return build(
        dataset_size_gb=np.array([140.0, 60.0]),
        dataset_ids=datasets,
        job_ids=tuple(j[0] for j in jobs),
        job_dataset=np.array([datasets.index(j[1]) for j in jobs]),
        options=(
            ptr,
            np.array([r[0] for r in rows]),
            np.array([r[1] for r in rows]),
            np.array([r[2] for r in rows]),
        ),
        gpus=12,
        cache_gb=100.0,
        prices=(1.0, 0.002, 20.0),
        budget_per_hour=budget_per_hour,
    )


def mccormick_toy() -> Instance:
    """Two jobs with two options each on one shared dataset: a P2 model small enough to print and read.

    What it teaches: the McCormick envelope (proofs/mccormick_exact.md) in
    the printed Pyomo model of P2 (docs/model.md §5), one row per option.
    The dataset (40 GB) costs 1.2 $/h to cache; streaming it costs 9 $/h per
    GB/s read.  Both jobs at 2 GPUs (welfare 11) cost 11.2 $/h, above the
    budget of 9.5 $/h.  One job at 2 GPUs and one at 1 (welfare 9) cost
    8.7 $/h with the dataset cached but 9.57 $/h streamed, so the optimum,
    welfare 9, must cache: in the solved MILP w = y·h = 1 on the chosen rows.
    The LP relaxation runs train-b fractionally at both options and bounds
    the welfare by 9.64; AutoCBA finds 9 and its certificate also says 9.64,
    so neither bound proves the optimum here (checked by tests/test_examples.py).
    """
    jobs = [
        {
            "id": "train-a",
            "dataset": "shared",
            "options": [{"gpus": 1, "io_gbps": 0.08, "utility": 3.0}, {"gpus": 2, "io_gbps": 0.15, "utility": 5.0}],
        },
        {
            "id": "train-b",
            "dataset": "shared",
            "options": [{"gpus": 1, "io_gbps": 0.08, "utility": 4.0}, {"gpus": 2, "io_gbps": 0.15, "utility": 6.0}],
        },
    ]
    datasets = [{"id": "shared", "size_gb": 40.0}]
    return build_instance(jobs, datasets, cache_gb=50.0, prices=(2.5, 0.03, 9.0), gpus=8, budget_per_hour=9.5)


def greedy_trap(m: int = 10) -> Instance:
    """Counterexample 1 of proofs/autocba_guarantee.md: a utility-per-dollar greedy without the best single job.

    Prices p_g = 1, p_c = p_b = 0, no cache, budget m $/h.  Job ``small``:
    1 GPU worth 2 (2 per dollar).  Job ``big``: m GPUs worth 1.5 m (1.5 per
    dollar).  A naive greedy takes ``small`` first, after which ``big`` no
    longer fits: welfare 2.  The optimum is ``big`` alone, 1.5 m, so the
    naive greedy's ratio 4 / (3 m) tends to 0.  AutoCBA compares its greedy
    with the best single job and returns 1.5 m (Theorem C, the ½ guarantee).
    ``m`` must be an integer ≥ 2.
    """
    if m < 2:
        raise ValueError(f"m must be >= 2, got {m}")
    jobs = [
        {"id": "small", "dataset": "a", "options": [{"gpus": 1, "io_gbps": 0.0, "utility": 2.0}]},
        {"id": "big", "dataset": "b", "options": [{"gpus": m, "io_gbps": 0.0, "utility": 1.5 * m}]},
    ]
    datasets = [{"id": "a", "size_gb": 1.0}, {"id": "b", "size_gb": 1.0}]
    return build_instance(jobs, datasets, cache_gb=0.0, prices=(1.0, 0.0, 0.0), budget_per_hour=float(m))


#: (job id, submit minute, duration minutes, GPUs, model, dataset) of :func:`small_trace`.
_TRACE = (
    ("in-1", 0, 150, 8, "resnet50", "imagenet-1k"),
    ("ds-1", 5, 120, 8, "deepspeech2", "librispeech-960h"),
    ("c10-1", 10, 40, 2, "resnet18", "cifar-10"),
    ("yo-1", 15, 90, 4, "yolov3", "coco-2017"),
    ("in-2", 30, 100, 8, "pollux-resnet50", "imagenet-1k"),
    ("c10-2", 35, 30, 1, "resnet18", "cifar-10"),
    ("yo-2", 45, 60, 4, "yolov3", "coco-2017"),
    ("ds-2", 60, 80, 4, "deepspeech2", "librispeech-960h"),
    ("in-3", 70, 60, 4, "resnet50", "imagenet-1k"),
    ("lm-1", 75, 45, 2, "lm", "wikitext-103"),
    ("c10-3", 90, 25, 4, "resnet18", "cifar-10"),
    ("ds-3", 110, 100, 8, "deepspeech2", "librispeech-960h"),
    ("yo-3", 120, 50, 2, "yolov3", "coco-2017"),
    ("in-4", 150, 90, 8, "resnet50", "imagenet-1k"),
    ("in-5", 160, 70, 8, "pollux-resnet50", "imagenet-1k"),
    ("lm-2", 170, 30, 1, "lm", "wikitext-2"),
    ("ds-4", 180, 60, 4, "deepspeech2", "librispeech-960h"),
    ("c10-4", 200, 20, 2, "resnet18", "cifar-10"),
    ("yo-4", 210, 60, 8, "yolov3", "coco-2017"),
    ("in-6", 240, 45, 4, "resnet50", "imagenet-1k"),
    ("ds-5", 250, 50, 8, "deepspeech2", "librispeech-960h"),
    ("c10-5", 270, 30, 1, "resnet18", "cifar-10"),
    ("yo-5", 280, 40, 4, "yolov3", "coco-2017"),
    ("in-7", 300, 30, 8, "resnet50", "imagenet-1k"),
)


def small_trace() -> pd.DataFrame:
    """A 24-job, six-hour trace in the generic CSV form (``submit_time_s, duration_s, gpus, job_id, model, dataset``).

    What it teaches: a replay (docs/model.md §6) where the cache decision
    changes over time.  Every job names a catalog model and dataset, so its
    rate comes from measured throughputs.  ImageNet has two to three 8-GPU
    jobs at its peak (ρ ≈ 0.002 s⁻¹) and one or none at other times;
    LibriSpeech and COCO come and go; CIFAR-10 is tiny and always worth
    caching.  With the replay prices of tutorials/03_a_cluster_over_time.ipynb
    (p_c / p_b = 0.001 s⁻¹) CBA caches ImageNet only while enough of its jobs
    run, and evicts it when they leave.
    """
    rows = [
        {
            "submit_time_s": 60.0 * submit,
            "duration_s": 60.0 * minutes,
            "gpus": gpus,
            "job_id": job,
            "model": model,
            "dataset": dataset,
        }
        for job, submit, minutes, gpus, model, dataset in _TRACE
    ]
    return pd.DataFrame(rows, columns=["submit_time_s", "duration_s", "gpus", "job_id", "model", "dataset"])
