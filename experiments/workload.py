"""Workloads: seeded instance generators, the catalog of models × datasets, trace loading and dataset assignment.

The generators run without ../shared: their distributions are calibrated to
published figures, each named where it is used.
"""

from __future__ import annotations

import csv
import gzip
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.models.instance import Instance, InstanceError, build
from cbalab.models.options import SHAPES, OptionTable, Utility, amdahl_throughput, option_table, stack

#: GPUs per job in the Philly trace (share of the 82,247 jobs of
#: ../shared/data/philly/philly_jobs.csv at 1, 2, 4, 8, 16 GPUs; the few
#: larger jobs are folded into 16).  Source: Microsoft Philly traces, CC-BY 4.0.
PHILLY_GPU_SHARES = {1: 0.9317, 2: 0.0221, 4: 0.0227, 8: 0.0200, 16: 0.0035}

#: Default prices, $/h per unit: a V100 GPU-hour (AWS p3 on-demand is about
#: $3.06 per GPU-hour; we use 2.5), a GB-hour of cluster cache and a
#: (GB/s)-hour of provisioned remote throughput, as in spec/INTERFACE.md's
#: example.  Every experiment sweeps the cache/bandwidth price ratio.
DEFAULT_PRICES = (2.5, 0.0004, 0.9)


def zipf_weights(n: int, skew: float) -> np.ndarray:
    """Popularity of n items under Zipf(skew): weight ∝ 1 / rank^skew (skew = 0 is uniform)."""
    w = 1.0 / np.arange(1, n + 1) ** skew
    return w / w.sum()


def generate_cost(
    n_jobs: int,
    n_datasets: int,
    seed: int,
    *,
    skew: float = 1.0,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    prices: tuple[float, float, float] = DEFAULT_PRICES,
) -> Instance:
    """A seeded cost-problem (P1) instance.

    GPUs per job follow the Philly shares; the per-GPU data rate is
    log-normal around 0.05 GB/s (ResNet-50 on a V100 reads about 1,200
    images/s × 110 KB ≈ 0.13 GB/s; lighter models read less); dataset sizes
    are log-normal around 50 GB, clipped to [0.1, 5,000] GB (CIFAR-10 is
    0.16 GB, ImageNet-1k 147 GB, OpenImages about 560 GB).  Jobs pick
    datasets by Zipf(``skew``) popularity.  The cache holds
    ``cache_fraction`` of all dataset bytes; the bandwidth cap is
    ``bandwidth_fraction`` of the total demand (None: no cap).
    """
    if n_jobs < 0 or n_datasets < 1:
        raise ValueError(f"need n_jobs >= 0 and n_datasets >= 1, got {n_jobs}, {n_datasets}")
    rng = np.random.default_rng(seed)
    counts = np.array(list(PHILLY_GPU_SHARES))
    shares = np.array(list(PHILLY_GPU_SHARES.values()))
    gpus = rng.choice(counts, size=n_jobs, p=shares / shares.sum())
    per_gpu = rng.lognormal(math.log(0.05), 0.8, size=n_jobs)
    io = gpus * per_gpu
    sizes = np.clip(rng.lognormal(math.log(50.0), 1.5, size=n_datasets), 0.1, 5000.0)
    popularity = zipf_weights(n_datasets, skew)
    rank_to_dataset = rng.permutation(n_datasets)
    job_dataset = rank_to_dataset[rng.choice(n_datasets, size=n_jobs, p=popularity)]
    bandwidth = math.inf if bandwidth_fraction is None else bandwidth_fraction * float(io.sum())
    return build(
        dataset_size_gb=sizes,
        job_dataset=job_dataset,
        job_gpus=gpus,
        job_io_gbps=io,
        cache_gb=cache_fraction * float(sizes.sum()),
        bandwidth_gbps=bandwidth,
        gpus=int(gpus.sum()),
        prices=prices,
    )


def _utility_shares(utility_mix: str | Mapping[str, float]) -> dict[str, float]:
    """``"mixed"`` (every shape of models.options.SHAPES equally), one shape's name, or {shape: share}."""
    if isinstance(utility_mix, str):
        if utility_mix == "mixed":
            return dict.fromkeys(SHAPES, 1.0 / len(SHAPES))
        if utility_mix not in SHAPES:
            raise InstanceError("utility_mix", utility_mix, f"must be 'mixed' or one of {', '.join(SHAPES)}")
        return {utility_mix: 1.0}
    shares = {str(k): float(v) for k, v in utility_mix.items()}
    unknown = sorted(set(shares) - set(SHAPES))
    if unknown:
        raise InstanceError(f"utility_mix.{unknown[0]}", shares[unknown[0]], f"unknown shape; known: {SHAPES}")
    total = sum(shares.values())
    if not all(math.isfinite(v) and v >= 0 for v in shares.values()) or total <= 0:
        raise InstanceError("utility_mix", shares, "shares must be >= 0 with a positive sum")
    return {k: v / total for k, v in shares.items()}


def generate_welfare(
    n_jobs: int,
    n_datasets: int,
    seed: int,
    *,
    utility_mix: str | Mapping[str, float] = "mixed",
    budget_fraction: float = 0.5,
    skew: float = 1.0,
    gpu_options: tuple[int, ...] = (1, 2, 4, 8),
    gpu_fraction: float = 0.5,
    cache_fraction: float = 0.2,
    bandwidth_fraction: float | None = None,
    alpha: float = 2.0,
    prices: tuple[float, float, float] = DEFAULT_PRICES,
) -> Instance:
    """A seeded welfare-problem (P2, MODEL.md §5) instance: every job has an option table, no fixed allocation.

    Each job scales by Amdahl's law (serial fraction uniform in [0, 0.3]) over
    ``gpu_options``; its per-GPU data rate is log-normal around 0.05 GB/s as in
    :func:`generate_cost`, its mean sample size log-normal around 110 KB (an
    ImageNet JPEG), which fixes its samples/s.  Utility shapes are drawn by
    ``utility_mix`` ("mixed" = every shape of models.options.SHAPES equally;
    α-fair uses ``alpha``); the sigmoid's midpoint is half the top speedup and
    a deadline job's remaining work is set so that a random one of its options
    is the slowest to meet a deadline of 2-24 h.  Every shape is scaled so
    that the top option is worth w × (top speedup), w log-normal around 3
    utility/h (a GPU-hour costs 2.5 $), so shapes differ in how value falls
    with fewer GPUs, not in scale.  Datasets and their Zipf(``skew``)
    popularity are as in :func:`generate_cost`.

    The cluster has G = ``gpu_fraction`` × Σ_j (largest option) GPUs, a cache
    of ``cache_fraction`` of all dataset bytes, a bandwidth cap of
    ``bandwidth_fraction`` × Σ_j r_j(largest option) (None: no cap), and a
    budget of ``budget_fraction`` × the cost of running every job at its
    largest option fed by remote IO only, p_g Σ g_max + p_b Σ r_j(g_max).
    """
    if n_jobs < 0 or n_datasets < 1:
        raise InstanceError("n_jobs, n_datasets", (n_jobs, n_datasets), "need n_jobs >= 0 and n_datasets >= 1")
    if not gpu_options or len(set(gpu_options)) != len(gpu_options) or min(gpu_options) < 1:
        raise InstanceError("gpu_options", list(gpu_options), "must be distinct whole numbers >= 1")
    for name, value in (("budget_fraction", budget_fraction), ("gpu_fraction", gpu_fraction)):
        if not (math.isfinite(value) and value >= 0):
            raise InstanceError(name, value, "must be finite and >= 0")
    shares = _utility_shares(utility_mix)
    rng = np.random.default_rng(seed)
    g = np.sort(np.asarray(gpu_options, dtype=np.int64))
    per_gpu = rng.lognormal(math.log(0.05), 0.8, size=n_jobs)
    sample_gb = rng.lognormal(math.log(1.1e-4), 0.5, size=n_jobs)
    serial = rng.uniform(0.0, 0.3, size=n_jobs)
    weight = rng.lognormal(math.log(3.0), 0.6, size=n_jobs)
    shape_names = list(shares)
    shapes = rng.choice(len(shape_names), size=n_jobs, p=np.array(list(shares.values())))
    deadline_h = rng.uniform(2.0, 24.0, size=n_jobs)
    threshold = rng.integers(0, g.size, size=n_jobs)
    tables = []
    for j in range(n_jobs):
        tput = amdahl_throughput(g, per_gpu[j] / sample_gb[j], float(serial[j]))
        x_top = float(tput[-1] / tput[0])
        shape = shape_names[shapes[j]]
        utility = Utility(
            shape,
            alpha=alpha,
            steepness=8.0 / x_top,
            midpoint=x_top / 2.0,
            remaining_samples=float(tput[threshold[j]]) * float(deadline_h[j]) * 3600.0 * 0.99,
            deadline_h=float(deadline_h[j]),
        )
        table = option_table(g, tput, float(sample_gb[j]), utility)
        scale = weight[j] * x_top / table.utility[-1]
        tables.append(OptionTable(table.gpus, table.io_gbps, table.utility * scale))
    options = stack(tables)
    top_gpus = float(g[-1]) * n_jobs
    top_io = float(sum(t.io_gbps[-1] for t in tables))
    sizes = np.clip(rng.lognormal(math.log(50.0), 1.5, size=n_datasets), 0.1, 5000.0)
    popularity = zipf_weights(n_datasets, skew)
    rank_to_dataset = rng.permutation(n_datasets)
    job_dataset = rank_to_dataset[rng.choice(n_datasets, size=n_jobs, p=popularity)]
    return build(
        dataset_size_gb=sizes,
        job_dataset=job_dataset,
        cache_gb=cache_fraction * float(sizes.sum()),
        bandwidth_gbps=math.inf if bandwidth_fraction is None else bandwidth_fraction * top_io,
        gpus=round(gpu_fraction * top_gpus),
        budget_per_hour=budget_fraction * (prices[0] * top_gpus + prices[2] * top_io),
        options=options,
        prices=prices,
    )


# ------------------------------------------------------- the catalog: (model, GPU type, GPUs) -> r_j(g) in GB/s
#
# MODEL.md §2 defines a job's data-consumption rate r_j(g) as its unstalled
# throughput (samples/s) times the mean sample size.  Throughputs are measured
# figures, embedded here so that cbalab runs without ../shared, each with its
# source; :func:`check_catalog` recomputes them from ../shared/data when given
# the path (tests do, when the folder is there).
#
# Gavel (Narayanan et al., OSDI'20; stanford-futuredata/gavel, MIT):
#   ../shared/data/gavel/isolated_throughputs.csv, steps/s of a job type alone on
#   1, 2, 4, 8 GPUs; samples/s = steps/s × the batch size in the job type's name
#   (CycleGAN and A3C have none: batch 1).  One batch size per model is used.
# Pollux (Qiao et al., OSDI'21; petuum/adaptdl osdi21-artifact, Apache-2.0), on
#   NVIDIA T4 (AWS g4dn.12xlarge, 4 GPUs per node):
#   samples/s = num_replicas × local_bsz / step_time, the best local batch size
#   at each replica count (Pollux adapts it), 1/2/4 replicas on one node from
#   MODEL/placements.csv (placements "1", "2", "4"), 8-64 from MODEL/scalability.csv.

#: Gavel job type (in isolated_throughputs.csv) and batch size behind each Gavel model of the catalog.
GAVEL_JOB_TYPES = {
    "resnet50": ("ResNet-50 (batch size 64)", 64),
    "resnet18": ("ResNet-18 (batch size 128)", 128),
    "transformer": ("Transformer (batch size 128)", 128),
    "lm": ("LM (batch size 80)", 80),
    "recommendation": ("Recommendation (batch size 8192)", 8192),
    "cyclegan": ("CycleGAN", 1),
}

#: Pollux artifact folder behind each Pollux model of the catalog.
POLLUX_MODELS = {
    "pollux-resnet50": "imagenet",
    "pollux-resnet18": "cifar10",
    "neumf": "ncf",
    "deepspeech2": "deepspeech2",
    "bert": "bert",
    "yolov3": "yolov3",
}


@dataclass(frozen=True)
class DatasetSpec:
    """A public training set: its size and sample count, hence its mean sample size."""

    id: str
    size_gb: float
    samples: int
    source: str

    @property
    def sample_gb(self) -> float:
        """Mean sample size in GB (size / samples)."""
        return self.size_gb / self.samples


@dataclass(frozen=True)
class ModelSpec:
    """A model with measured throughput: {GPU type: {GPUs: samples/s}} and the datasets it trains on.

    A model lists several datasets only where its throughput does not depend
    on which one it reads (fixed-size inputs: images resized to the network's
    input, fixed-length token sequences).
    """

    id: str
    datasets: tuple[str, ...]
    throughput: Mapping[str, Mapping[int, float]]
    default_gpu: str
    source: str

    def samples_per_second(self, gpus: np.ndarray, gpu_type: str | None = None) -> np.ndarray:
        """Unstalled samples/s at ``gpus`` GPUs of ``gpu_type`` (default: the model's measured type).

        Between measured GPU counts the throughput is interpolated linearly;
        outside them it scales linearly from the nearest measured count's
        per-GPU rate (an upper estimate of the IO a larger job needs: real
        scaling is sublinear).
        """
        kind = self.default_gpu if gpu_type is None else gpu_type
        if kind not in self.throughput:
            raise InstanceError("gpu_type", kind, f"model {self.id!r} is measured on {sorted(self.throughput)}")
        table = self.throughput[kind]
        g = np.asarray(sorted(table), dtype=float)
        s = np.asarray([table[int(x)] for x in g], dtype=float)
        x = np.asarray(gpus, dtype=float)
        return np.where(x < g[0], s[0] / g[0] * x, np.where(x > g[-1], s[-1] / g[-1] * x, np.interp(x, g, s)))


#: Public datasets (decimal GB).  Sizes are the training split as distributed;
#: the mean sample size is size / samples.
CATALOG_DATASETS = (
    # ILSVRC-2012 train (Russakovsky et al., IJCV 2015): 1,281,167 JPEGs, about 147 GB -> ≈ 115 KB each.
    DatasetSpec("imagenet-1k", 147.0, 1_281_167, "ILSVRC-2012 train, image-net.org"),
    # CIFAR-10 train (Krizhevsky 2009): 50,000 records of 1 label byte + 3,072 pixel bytes (binary version).
    DatasetSpec("cifar-10", 50_000 * 3073 / 1e9, 50_000, "CIFAR-10 binary version, cs.toronto.edu/~kriz/cifar.html"),
    # COCO 2017 train (Lin et al., ECCV 2014): 118,287 images, train2017.zip about 18 GB.
    DatasetSpec("coco-2017", 18.0, 118_287, "COCO 2017 train images, cocodataset.org"),
    # PASCAL VOC 2007+2012 trainval (YOLOv3 in Pollux): 16,551 images at the VOC2012 tar's ≈ 111 KB per image.
    DatasetSpec("voc-07-12", 16_551 * 111e-6, 16_551, "PASCAL VOC 2007+2012 trainval, host.robots.ox.ac.uk/pascal/VOC"),
    # LibriSpeech 960 h (Panayotov et al., ICASSP 2015): 281,241 utterances; train-clean-100/360 and
    # train-other-500 archives are 6.3 + 23 + 30 GB of FLAC.
    DatasetSpec("librispeech-960h", 59.3, 281_241, "LibriSpeech train 960 h, openslr.org/12"),
    # WikiText-2 (Merity et al., 2016): 2,088,628 training tokens, wiki.train.raw ≈ 10.9 MB; a sample is one
    # 35-token sequence (the BPTT length of Gavel's word language model).
    DatasetSpec("wikitext-2", 0.0109, 2_088_628 // 35, "WikiText-2 raw, Merity et al. 2016"),
    # WikiText-103: 103,227,021 training tokens, wiki.train.raw ≈ 539 MB; 35-token samples as above.
    DatasetSpec("wikitext-103", 0.539, 103_227_021 // 35, "WikiText-103 raw, Merity et al. 2016"),
    # Multi30k de-en (Elliott et al., 2016; Gavel's Transformer): 29,000 training pairs, ≈ 3.9 MB of text.
    DatasetSpec("multi30k", 0.0039, 29_000, "Multi30k task 1 train, Elliott et al. 2016"),
    # MovieLens-20M (Harper & Konstan, 2015; Gavel's recommendation autoencoder): ratings.csv ≈ 533 MB over
    # 138,493 users; a sample is one user's ratings.
    DatasetSpec("movielens-20m", 0.533, 138_493, "MovieLens 20M, grouplens.org"),
    # MovieLens-1M as used by NCF (He et al., WWW 2017; Pollux's NeuMF): 994,169 training ratings,
    # ml-1m.train.rating ≈ 21 MB.
    DatasetSpec("movielens-1m", 0.021, 994_169, "MovieLens 1M, NCF split (hexiangnan/neural_collaborative_filtering)"),
    # SQuAD v1.1 (Rajpurkar et al., 2016; Pollux's BERT fine-tuning): 87,599 questions, train-v1.1.json ≈ 30.3 MB.
    DatasetSpec("squad-1.1", 0.0303, 87_599, "SQuAD v1.1 train, rajpurkar.github.io/SQuAD-explorer"),
    # monet2photo (Zhu et al., ICCV 2017; Gavel's CycleGAN): 1,072 + 6,287 training images of 256×256 JPEG,
    # ≈ 35 KB each.
    DatasetSpec("monet2photo", 7_359 * 35e-6, 7_359, "CycleGAN monet2photo, Zhu et al. 2017"),
)

#: Models and their measured samples/s (see the comment above for how each number is derived).
CATALOG_MODELS = (
    ModelSpec(
        "resnet50",
        ("imagenet-1k",),
        {
            "k80": {1: 39.62, 2: 80.87, 4: 154.4, 8: 292.4},
            "p100": {1: 167.6, 2: 353.0, 4: 663.3, 8: 1166.0},
            "v100": {1: 281.3, 2: 507.0, 4: 604.9, 8: 1107.0},
        },
        "v100",
        "Gavel isolated_throughputs.csv, 'ResNet-50 (batch size 64)' × 64",
    ),
    ModelSpec(
        "resnet18",
        ("cifar-10",),
        {
            "k80": {1: 231.2, 2: 464.8, 4: 893.7, 8: 1749.0},
            "p100": {1: 1494.0, 2: 3101.0, 4: 5805.0, 8: 10890.0},
            "v100": {1: 2303.0, 2: 3070.0, 4: 8954.0, 8: 20750.0},
        },
        "v100",
        "Gavel isolated_throughputs.csv, 'ResNet-18 (batch size 128)' × 128",
    ),
    ModelSpec(
        "transformer",
        ("multi30k",),
        {
            "k80": {1: 125.6, 2: 212.2, 4: 366.8, 8: 672.9},
            "p100": {1: 393.4, 2: 651.2, 4: 1123.0, 8: 1752.0},
            "v100": {1: 697.1, 2: 1289.0, 4: 1814.0, 8: 3953.0},
        },
        "v100",
        "Gavel isolated_throughputs.csv, 'Transformer (batch size 128)' × 128",
    ),
    ModelSpec(
        "lm",
        ("wikitext-2", "wikitext-103"),
        {
            "k80": {1: 484.3, 2: 800.7, 4: 1311.0, 8: 2263.0},
            "p100": {1: 1693.0, 2: 2547.0, 4: 4400.0, 8: 6635.0},
            "v100": {1: 2259.0, 2: 4647.0, 4: 5985.0, 8: 18490.0},
        },
        "v100",
        "Gavel isolated_throughputs.csv, 'LM (batch size 80)' × 80",
    ),
    ModelSpec(
        "recommendation",
        ("movielens-20m",),
        {"k80": {1: 22110.0}, "p100": {1: 45450.0}, "v100": {1: 23280.0}},
        "v100",
        "Gavel isolated_throughputs.csv, 'Recommendation (batch size 8192)' × 8192 (measured on 1 GPU only)",
    ),
    ModelSpec(
        "cyclegan",
        ("monet2photo",),
        {"k80": {1: 0.5048}, "p100": {1: 2.403}, "v100": {1: 4.426}},
        "v100",
        "Gavel isolated_throughputs.csv, 'CycleGAN' × 1 (measured on 1 GPU only)",
    ),
    ModelSpec(
        "pollux-resnet50",
        ("imagenet-1k",),
        {"t4": {1: 216.6, 2: 423.9, 4: 796.0, 8: 1612.0, 16: 3200.0, 32: 6215.0, 64: 11780.0}},
        "t4",
        "Pollux artifact imagenet/{placements,scalability}.csv (ResNet-50)",
    ),
    ModelSpec(
        "pollux-resnet18",
        ("cifar-10",),
        {"t4": {1: 1461.0, 2: 2559.0, 4: 5215.0, 8: 10450.0, 16: 20250.0, 32: 37720.0, 64: 35170.0}},
        "t4",
        "Pollux artifact cifar10/{placements,scalability}.csv (ResNet-18)",
    ),
    ModelSpec(
        "neumf",
        ("movielens-1m",),
        {"t4": {1: 1537000.0, 2: 1234000.0, 4: 1849000.0, 8: 1177000.0, 16: 1207000.0, 32: 928600.0, 64: 739200.0}},
        "t4",
        "Pollux artifact ncf/{placements,scalability}.csv (NeuMF)",
    ),
    ModelSpec(
        "deepspeech2",
        ("librispeech-960h",),
        {"t4": {1: 35.66, 2: 66.03, 4: 129.8, 8: 244.3, 16: 496.6, 32: 849.1, 64: 650.8}},
        "t4",
        "Pollux artifact deepspeech2/{placements,scalability}.csv (measured on Voxforge; LibriSpeech's longer "
        "utterances make this an upper estimate of its samples/s)",
    ),
    ModelSpec(
        "bert",
        ("squad-1.1",),
        {"t4": {1: 13.02, 2: 26.11, 4: 50.15, 8: 60.0, 16: 111.7, 32: 207.6, 64: 344.2}},
        "t4",
        "Pollux artifact bert/{placements,scalability}.csv (BERT fine-tuning on SQuAD)",
    ),
    ModelSpec(
        "yolov3",
        ("voc-07-12", "coco-2017"),
        {"t4": {1: 27.94, 2: 52.66, 4: 84.17, 8: 61.6, 16: 123.9, 32: 212.1, 64: 345.3}},
        "t4",
        "Pollux artifact yolov3/{placements,scalability}.csv (measured on PASCAL VOC; inputs resized to 416 px)",
    ),
)


@dataclass(frozen=True)
class Catalog:
    """Models × datasets: turns (model, dataset, GPU type, GPUs) into r_j(g) in GB/s (MODEL.md §2-§3)."""

    models: Mapping[str, ModelSpec]
    datasets: Mapping[str, DatasetSpec]

    @classmethod
    def default(cls) -> Catalog:
        """The embedded catalog (CATALOG_MODELS × CATALOG_DATASETS)."""
        return cls({m.id: m for m in CATALOG_MODELS}, {d.id: d for d in CATALOG_DATASETS})

    def rate_gbps(
        self, model: str, gpus: int | np.ndarray, *, gpu_type: str | None = None, dataset: str | None = None
    ) -> float | np.ndarray:
        """r_j(g) = samples/s × mean sample size (GB/s) of ``model`` reading ``dataset`` (default: its first)."""
        spec = self.model(model)
        data = self.dataset(spec.datasets[0] if dataset is None else dataset)
        rate = spec.samples_per_second(np.asarray(gpus), gpu_type) * data.sample_gb
        return float(rate) if np.ndim(gpus) == 0 else rate

    def model(self, name: str) -> ModelSpec:
        """The model ``name``; InstanceError naming it otherwise."""
        if name not in self.models:
            raise InstanceError("model", name, f"unknown model; the catalog has {sorted(self.models)}")
        return self.models[name]

    def dataset(self, name: str) -> DatasetSpec:
        """The dataset ``name`` (a variant ``name~c`` resolves to its template); InstanceError otherwise."""
        base = name.split("~", 1)[0]
        if base not in self.datasets:
            raise InstanceError("dataset", name, f"unknown dataset; the catalog has {sorted(self.datasets)}")
        return self.datasets[base]


def check_catalog(shared_data: str | Path, catalog: Catalog | None = None, rtol: float = 1e-3) -> list[str]:
    """Recompute every embedded throughput from the CSVs under ``shared_data``; return the mismatches (none = [])."""
    cat = catalog or Catalog.default()
    root = Path(shared_data)
    problems: list[str] = []
    gavel = pd.read_csv(root / "gavel" / "isolated_throughputs.csv")
    for name, (job_type, batch) in GAVEL_JOB_TYPES.items():
        for gpu_type, table in cat.models[name].throughput.items():
            rows = gavel[(gavel.job_type == job_type) & (gavel.gpu_type == gpu_type)]
            measured = {int(g): float(s) * batch for g, s in zip(rows.num_gpus, rows.steps_per_second)}
            problems += _compare(f"{name}/{gpu_type}", table, measured, rtol)
    for name, folder in POLLUX_MODELS.items():
        place = pd.read_csv(root / "pollux-scalability" / folder / "placements.csv", dtype={"placement": str})
        place = place[place.placement.isin(["1", "2", "4"])]
        scal = pd.read_csv(root / "pollux-scalability" / folder / "scalability.csv")
        scal = scal[scal.num_replicas.isin([8, 16, 32, 64])]
        reps = np.concatenate([place.placement.astype(int).to_numpy(), scal.num_replicas.to_numpy()])
        sps = np.concatenate(
            [
                place.placement.astype(int).to_numpy() * place.local_bsz.to_numpy() / place.step_time.to_numpy(),
                scal.num_replicas.to_numpy() * scal.local_bsz.to_numpy() / scal.step_time.to_numpy(),
            ]
        )
        best = pd.Series(sps).groupby(reps).max()
        problems += _compare(name, cat.models[name].throughput["t4"], {int(k): float(v) for k, v in best.items()}, rtol)
    return problems


def _compare(what: str, embedded: Mapping[int, float], measured: Mapping[int, float], rtol: float) -> list[str]:
    out = []
    if set(embedded) != set(measured):
        out.append(f"{what}: GPU counts {sorted(embedded)} embedded, {sorted(measured)} measured")
    for g in set(embedded) & set(measured):
        if abs(embedded[g] - measured[g]) > rtol * abs(measured[g]):
            out.append(f"{what} at {g} GPUs: embedded {embedded[g]} samples/s, measured {measured[g]:.6g}")
    return out


# ---------------------------------------------------------------- traces: the Philly trace and the generic CSV form

#: The Philly trace's columns (spec/INTERFACE.md, "Traces and simulation output").
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
#: The generic trace's required and optional columns.
TRACE_COLUMNS = ("submit_time_s", "duration_s", "gpus")
TRACE_OPTIONAL = ("job_id", "model", "dataset")

#: Calibration of :func:`generate_trace` to ../shared/data/philly/philly_jobs.csv (82,247 jobs, 2017-09-04 to
#: 2017-12-22): arrivals per second (82,247 jobs over 9,408,690 s), mean and standard deviation of ln(duration in
#: seconds), and the shortest and longest duration.  Source: Microsoft Philly traces, CC-BY 4.0.
PHILLY_ARRIVALS_PER_S = 82_247 / 9_408_690
PHILLY_LOG_DURATION = (6.79, 2.16)
PHILLY_DURATION_RANGE_S = (1.0, 4_628_226.0)


class TraceError(InstanceError):
    """A bad trace file: the message names the file, the line and the column (CLI exit 2)."""

    def __init__(self, source: str, line: int, column: str, value: object, problem: str) -> None:
        self.line = line
        self.column = column
        super().__init__(f"{source}: line {line}, column {column!r}", value, problem)


def load_trace(path: str | Path) -> pd.DataFrame:
    """Read a job trace (generic or Philly form) into a DataFrame sorted by submit time.

    Columns: ``line`` (of the file), ``job_id``, ``submit_s`` (from the
    earliest submission in the Philly form, as written in the generic form),
    ``duration_s``, ``gpus``, ``model`` and ``dataset`` ("" when not pinned).
    A path ending in ``.gz`` is read through gzip (the shipped Philly trace is
    ``philly_jobs.csv.gz``).  Blank lines are skipped (the Philly file ends with one).  Every bad value
    raises :class:`TraceError` naming the line and the column.
    """
    p = Path(path)
    source = str(path)
    try:
        with gzip.open(p, "rt", newline="") if p.suffix == ".gz" else p.open(newline="") as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if not row or all(not x.strip() for x in row):
                    continue
                rows.append(row)
                lines.append(reader.line_num)
    except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
        raise InstanceError("trace", str(path), f"cannot read the file: {e.__class__.__name__}: {e}") from None
    if header is None:
        raise TraceError(source, 1, "header", None, "empty file: expected a header line")
    header = [h.strip() for h in header]
    philly = set(PHILLY_COLUMNS) <= set(header)
    required = ("timestamp", "duration", "num_gpus") if philly else TRACE_COLUMNS
    for col in required:
        if col not in header:
            raise TraceError(source, 1, col, header, "required column missing from the header")
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise TraceError(source, lines[i], "*", row, f"has {len(row)} fields, the header has {len(header)}")
    line = np.asarray(lines, dtype=np.int64)
    cols = {h: [r[i].strip() for r in rows] for i, h in enumerate(header)}

    def number(col: str, *, positive: bool, integer: bool) -> np.ndarray:
        values = pd.to_numeric(pd.Series(cols[col], dtype=object), errors="coerce").to_numpy(dtype=float)
        ok = np.isfinite(values) & ((values > 0) if positive else (values >= 0))
        if integer:
            ok &= values == np.floor(values)
        bad = np.flatnonzero(~ok)
        if bad.size:
            what = ("a whole number" if integer else "a number") + (" > 0" if positive else " >= 0")
            raise TraceError(source, int(line[bad[0]]), col, cols[col][bad[0]], f"must be {what}")
        return values

    if philly:
        stamps = pd.to_datetime(pd.Series(cols["timestamp"]), format="%Y-%m-%d %H:%M:%S", errors="coerce")
        bad = np.flatnonzero(stamps.isna().to_numpy())
        if bad.size:
            raise TraceError(
                source, int(line[bad[0]]), "timestamp", cols["timestamp"][bad[0]], "not YYYY-MM-DD HH:MM:SS"
            )
        seconds = (stamps - stamps.min()).dt.total_seconds().to_numpy() if len(rows) else np.zeros(0)
        duration = number("duration", positive=True, integer=False)
        gpus = number("num_gpus", positive=True, integer=True)
        ids = [f"philly-{n}" for n in line]
        model = dataset = [""] * len(rows)
    else:
        seconds = number("submit_time_s", positive=False, integer=False)
        duration = number("duration_s", positive=True, integer=False)
        gpus = number("gpus", positive=True, integer=True)
        ids = cols["job_id"] if "job_id" in cols else [f"job-{n}" for n in line]
        seen: dict[str, int] = {}
        for i, jid in enumerate(ids):
            if not jid:
                raise TraceError(source, int(line[i]), "job_id", jid, "must be a non-empty string")
            if jid in seen:
                raise TraceError(source, int(line[i]), "job_id", jid, f"duplicate id (first on line {seen[jid]})")
            seen[jid] = int(line[i])
        model = cols.get("model", [""] * len(rows))
        dataset = cols.get("dataset", [""] * len(rows))
    frame = pd.DataFrame(
        {
            "line": line,
            "job_id": ids,
            "submit_s": seconds,
            "duration_s": duration,
            "gpus": gpus.astype(np.int64),
            "model": model,
            "dataset": dataset,
        }
    )
    frame.attrs["source"] = source
    return frame.sort_values("submit_s", kind="stable").reset_index(drop=True)


def generate_trace(
    n_jobs: int,
    seed: int,
    *,
    arrivals_per_s: float = PHILLY_ARRIVALS_PER_S,
    log_duration: tuple[float, float] = PHILLY_LOG_DURATION,
) -> pd.DataFrame:
    """A seeded synthetic trace calibrated to the Philly trace (same columns as :func:`load_trace`).

    Poisson arrivals at the Philly rate, log-normal durations (ln seconds with
    the trace's mean and standard deviation, clipped to its range) and GPUs
    per job by PHILLY_GPU_SHARES.
    """
    if n_jobs < 0:
        raise InstanceError("n_jobs", n_jobs, "must be >= 0")
    if not (arrivals_per_s > 0 and math.isfinite(arrivals_per_s)):
        raise InstanceError("arrivals_per_s", arrivals_per_s, "must be finite and > 0")
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(1.0 / arrivals_per_s, size=n_jobs))
    submit -= submit[0] if n_jobs else 0.0
    duration = np.clip(np.exp(rng.normal(log_duration[0], log_duration[1], size=n_jobs)), *PHILLY_DURATION_RANGE_S)
    counts = np.array(list(PHILLY_GPU_SHARES))
    shares = np.array(list(PHILLY_GPU_SHARES.values()))
    gpus = rng.choice(counts, size=n_jobs, p=shares / shares.sum())
    frame = pd.DataFrame(
        {
            "line": np.zeros(n_jobs, dtype=np.int64),
            "job_id": [f"gen-{j}" for j in range(n_jobs)],
            "submit_s": submit,
            "duration_s": np.round(duration),
            "gpus": gpus.astype(np.int64),
            "model": [""] * n_jobs,
            "dataset": [""] * n_jobs,
        }
    )
    frame.attrs["source"] = f"generated (n={n_jobs}, seed={seed})"
    return frame


# ---------------------------------------------------------------- assigning models and datasets to a trace's jobs


@dataclass(frozen=True)
class Workload:
    """A trace with every job's model, dataset and rate r_j(g_j), and the datasets it reads.

    ``jobs`` has the columns of :func:`load_trace` plus ``io_gbps`` and
    ``dataset_index`` (position in ``datasets``); ``datasets`` has ``dataset``
    and ``size_gb``; ``settings`` records the seed, skew, number of datasets
    and GPU type that produced it.
    """

    jobs: pd.DataFrame
    datasets: pd.DataFrame
    settings: dict


def workload_datasets(n_datasets: int, catalog: Catalog | None = None) -> list[str]:
    """The ids of ``n_datasets`` datasets: the catalog's public datasets, then copies of them.

    Dataset i is a copy of catalog dataset i mod T (T public datasets); copy
    c ≥ 1 is called ``id~c``.  Copies stand for the per-team versions (other
    preprocessing, subsets, augmented copies) that make real clusters hold many
    more datasets than the public list, with the same sizes and sample sizes.
    """
    cat = catalog or Catalog.default()
    if n_datasets < 1:
        raise InstanceError("n_datasets", n_datasets, "must be >= 1")
    base = list(cat.datasets)
    return [base[i % len(base)] + ("" if i < len(base) else f"~{i // len(base)}") for i in range(n_datasets)]


def assign(
    trace: pd.DataFrame,
    seed: int,
    *,
    skew: float = 1.0,
    n_datasets: int = 48,
    gpu_type: str | None = None,
    catalog: Catalog | None = None,
) -> Workload:
    """Give every job of ``trace`` a model and a dataset, seeded, and its rate r_j(g_j) from the catalog.

    Datasets are drawn with Zipf(``skew``) popularity over the
    :func:`workload_datasets` (ranks in a seeded order; skew 0 is uniform, a
    larger skew concentrates jobs on fewer datasets, so sharing is a swept
    parameter); the model uniformly among the catalog models that train on the
    dataset.  Jobs whose trace row pins a model or a dataset keep it (a pinned
    model without a dataset draws one of the model's datasets by the same
    Zipf weights).  ``gpu_type`` None uses each model's measured GPU type.
    The default of 48 datasets is four copies of each of the 12 public ones.
    """
    cat = catalog or Catalog.default()
    if not (math.isfinite(skew) and skew >= 0):
        raise InstanceError("skew", skew, "must be finite and >= 0")
    ids = workload_datasets(n_datasets, cat)
    source = trace.attrs.get("source", "trace")
    model_col = trace["model"].to_numpy(dtype=object)
    data_col = trace["dataset"].to_numpy(dtype=object)
    lines = trace["line"].to_numpy()
    for col, values, known in (("model", model_col, cat.models), ("dataset", data_col, set(ids))):
        bad = [i for i, v in enumerate(values) if v and v not in known]
        if bad:
            i = bad[0]
            raise TraceError(source, int(lines[i]), col, values[i], f"unknown {col}; known: {sorted(known)[:12]} ...")
    rng = np.random.default_rng(seed)
    n = len(trace)
    popularity = zipf_weights(len(ids), skew)
    rank_to_dataset = rng.permutation(len(ids))
    drawn = rank_to_dataset[rng.choice(len(ids), size=n, p=popularity)]
    index = {k: i for i, k in enumerate(ids)}
    template = [cat.dataset(k).id for k in ids]
    pick = rng.random(n)
    dataset_index = drawn.copy()
    rank_of = np.argsort(rank_to_dataset)
    for j in np.flatnonzero([bool(v) for v in data_col]):
        dataset_index[j] = index[data_col[j]]
    for j in np.flatnonzero([bool(m) and not d for m, d in zip(model_col, data_col)]):
        own = np.array([i for i in range(len(ids)) if template[i] in cat.models[model_col[j]].datasets])
        w = np.cumsum(popularity[rank_of[own]])
        dataset_index[j] = own[min(int(np.searchsorted(w / w[-1], pick[j], side="right")), own.size - 1)]
    readers = {d: [m.id for m in cat.models.values() if d in m.datasets] for d in cat.datasets}
    choices = [readers[template[i]] for i in range(len(ids))]
    n_choices = np.array([len(c) for c in choices])
    table = np.array([c + [""] * (n_choices.max() - len(c)) for c in choices], dtype=object)
    slot = np.minimum((pick * n_choices[dataset_index]).astype(np.int64), n_choices[dataset_index] - 1)
    models = np.where(np.asarray([bool(m) for m in model_col], dtype=bool), model_col, table[dataset_index, slot])
    gpus = trace["gpus"].to_numpy()
    sample_gb = np.array([cat.dataset(k).sample_gb for k in ids])
    sps = np.zeros(n)
    for name in set(models):
        mask = models == name
        sps[mask] = cat.model(name).samples_per_second(gpus[mask], gpu_type)
    jobs = trace.copy()
    jobs["model"] = models.astype(str)
    jobs["dataset"] = [ids[i] for i in dataset_index]
    jobs["dataset_index"] = dataset_index
    jobs["io_gbps"] = sps * sample_gb[dataset_index]
    datasets = pd.DataFrame({"dataset": ids, "size_gb": [cat.dataset(k).size_gb for k in ids]})
    settings = {"seed": seed, "skew": skew, "n_datasets": n_datasets, "gpu_type": gpu_type or "model default"}
    return Workload(jobs, datasets, settings)
