"""The catalog of models × datasets: (model, GPU type, GPUs) -> r_j(g) in GB/s (docs/model.md §2-§3).

docs/model.md §2 defines a job's data-consumption rate r_j(g) as its unstalled
throughput (samples/s) times the mean sample size.  Throughputs are measured
figures, stored in ``catalog.csv`` beside this module (shipped in the wheel)
so that cbalab runs without ../shared, every row with its source (the
``source`` and ``note`` columns); :func:`check_catalog` recomputes them from
../shared/data when given the path (tests do, when the folder is there).

catalog.csv is one tidy table with a ``record`` column: ``dataset`` rows
(size_gb, samples), ``model`` rows (datasets separated by spaces,
default_gpu) and ``throughput`` rows (model id, gpu_type, gpus,
samples_per_s).  Numbers are written as Python's shortest round-trip
repr, so they load bit-for-bit.

Gavel (Narayanan et al., OSDI'20; stanford-futuredata/gavel, MIT):
  ../shared/data/gavel/isolated_throughputs.csv, steps/s of a job type alone on
  1, 2, 4, 8 GPUs; samples/s = steps/s × the batch size in the job type's name
  (CycleGAN and A3C have none: batch 1).  One batch size per model is used.
Pollux (Qiao et al., OSDI'21; petuum/adaptdl osdi21-artifact, Apache-2.0), on
  NVIDIA T4 (AWS g4dn.12xlarge, 4 GPUs per node):
  samples/s = num_replicas × local_bsz / step_time, the best local batch size
  at each replica count (Pollux adapts it), 1/2/4 replicas on one node from
  MODEL/placements.csv (placements "1", "2", "4"), 8-64 from MODEL/scalability.csv.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from cbalab.experiments.provenance import note_read
from cbalab.models.instance import InstanceError

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


def _load_catalog() -> tuple[tuple[DatasetSpec, ...], tuple[ModelSpec, ...]]:
    """The datasets and models of catalog.csv, in file order (the order fixes dataset and model draws)."""
    source = resources.files(__package__).joinpath("catalog.csv")
    note_read(str(source))
    text = source.read_text(encoding="utf-8")
    datasets: list[DatasetSpec] = []
    models: dict[str, tuple[tuple[str, ...], str, str]] = {}
    throughput: dict[str, dict[str, dict[int, float]]] = {}
    for row in csv.DictReader(text.splitlines()):
        kind, name = row["record"], row["id"]
        if kind == "dataset":
            datasets.append(DatasetSpec(name, float(row["size_gb"]), int(row["samples"]), row["source"]))
        elif kind == "model":
            models[name] = (tuple(row["datasets"].split()), row["default_gpu"], row["source"])
        elif kind == "throughput":
            table = throughput.setdefault(name, {}).setdefault(row["gpu_type"], {})
            table[int(row["gpus"])] = float(row["samples_per_s"])
        else:
            raise ValueError(f"catalog.csv: unknown record {kind!r} for {name!r}")
    specs = tuple(ModelSpec(name, data, throughput[name], gpu, source) for name, (data, gpu, source) in models.items())
    return tuple(datasets), specs


#: Public datasets (decimal GB) and the models with their measured samples/s, from catalog.csv.  Sizes are the
#: training split as distributed; the mean sample size is size / samples.
CATALOG_DATASETS, CATALOG_MODELS = _load_catalog()


@dataclass(frozen=True)
class Catalog:
    """Models × datasets: turns (model, dataset, GPU type, GPUs) into r_j(g) in GB/s (docs/model.md §2-§3)."""

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
        problems += _compare(
            name,
            cat.models[name].throughput["t4"],
            dict(zip(best.index.astype(int).tolist(), best.to_numpy(float).tolist())),
            rtol,
        )
    return problems


def _compare(what: str, embedded: Mapping[int, float], measured: Mapping[int, float], rtol: float) -> list[str]:
    out = []
    if set(embedded) != set(measured):
        out.append(f"{what}: GPU counts {sorted(embedded)} embedded, {sorted(measured)} measured")
    for g in set(embedded) & set(measured):
        if abs(embedded[g] - measured[g]) > rtol * abs(measured[g]):
            out.append(f"{what} at {g} GPUs: embedded {embedded[g]} samples/s, measured {measured[g]:.6g}")
    return out
