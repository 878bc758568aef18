"""Figure output shared by the experiments: matplotlib on the Agg backend, every figure as PDF and PNG."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt

from cbalab.models.files import atomic_write_bytes

#: One colour and marker per method, so that a method looks the same in every figure.
STYLE: dict[str, dict[str, Any]] = {
    "cba": {"color": "#d62728", "marker": "o"},
    "autocba": {"color": "#d62728", "marker": "o"},
    "io-only": {"color": "#7f7f7f", "marker": "x"},
    "cache-all": {"color": "#1f77b4", "marker": "s"},
    "coordl": {"color": "#9467bd", "marker": "^"},
    "quiver": {"color": "#2ca02c", "marker": "v"},
    "silod": {"color": "#ff7f0e", "marker": "D"},
    "lp": {"color": "#8c564b", "marker": "P"},
    "milp": {"color": "#000000", "marker": "*"},
    "highspy": {"color": "#17becf", "marker": "h"},
    "gavel-tput": {"color": "#1f77b4", "marker": "s"},
    "gavel-tput-tuned": {"color": "#17becf", "marker": "s"},
    "gavel-fair": {"color": "#2ca02c", "marker": "^"},
    "gavel-fair-tuned": {"color": "#bcbd22", "marker": "^"},
    "optimus": {"color": "#9467bd", "marker": "v"},
    "optimus-tuned": {"color": "#e377c2", "marker": "v"},
    "utility-greedy": {"color": "#8c564b", "marker": "P"},
    "utility-greedy-tuned": {"color": "#c49c94", "marker": "P"},
}


def style(name: str) -> dict[str, Any]:
    """Plot keywords of method ``name`` (a fixed colour and marker; grey for an unknown name)."""
    return dict(STYLE.get(name, {"color": "#444444", "marker": "."}))


def figure(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.2) -> tuple[Any, Any]:
    """A new figure of ``nrows × ncols`` panels, ``width × height`` inches each."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes


def save(fig: Any, outdir: Path, stem: str, *, tight: bool = True) -> list[Path]:
    """Write ``fig`` as ``outdir/stem.pdf`` and ``outdir/stem.png`` (atomically), close it, return both paths.

    ``tight`` lays the panels out with tight_layout first (off for a figure laid out by hand).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    paths = []
    for ext, kwargs in (("pdf", {"metadata": {"CreationDate": None}}), ("png", {"dpi": 150})):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, **kwargs)
        paths.append(atomic_write_bytes(outdir / f"{stem}.{ext}", buf.getvalue()))
    plt.close(fig)
    return paths
