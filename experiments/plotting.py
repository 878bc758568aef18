"""The one plotting style of cbalab: a colour and marker per method, figure sizes, and PDF + PNG output.

Both the figures of ``cbalab experiment NAME`` (:func:`figure`, :func:`save`) and those of ``cbalab paper``
(:func:`paper_figure`, :func:`render`) draw from here, so that a method looks the same everywhere and every
figure is encoded without dates or version tags (one machine redraws the same bytes).  matplotlib runs on
the Agg backend.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
from matplotlib.ticker import FuncFormatter

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
    "utility-greedy": {"color": "#8c564b", "marker": "<"},
    "utility-greedy-tuned": {"color": "#c49c94", "marker": "<"},
}

#: ``savefig`` keywords per format: no creation date, producer or software tag, so the bytes depend on the
#: drawing alone (and on the matplotlib and FreeType builds).
FORMATS: dict[str, dict[str, Any]] = {
    "pdf": {"metadata": {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}},
    "png": {"dpi": 150, "metadata": {"Software": None}},
}


def style(name: str) -> dict[str, Any]:
    """Plot keywords of method ``name`` (a fixed colour and marker; grey for an unknown name)."""
    return dict(STYLE.get(name, {"color": "#444444", "marker": "."}))


def figure(ncols: int = 1, nrows: int = 1, width: float = 4.2, height: float = 3.2) -> tuple[Any, Any]:
    """A new figure of ``nrows × ncols`` panels, ``width × height`` inches each."""
    fig, axes = plt.subplots(nrows, ncols, figsize=(width * ncols, height * nrows), squeeze=False)
    return fig, axes


def paper_figure(ncols: int = 1, nrows: int = 1, width: float = 3.4, height: float = 2.3) -> tuple[Any, Any]:
    """A figure of ``nrows × ncols`` panels sized for the paper: ``width × height`` inches in all, small fonts.

    3.4 inches is one column of the paper, 7.0 the full page width.  The fonts, marker size and line width
    are set in matplotlib's rcParams, so they hold for every figure drawn after this one in the process.
    """
    plt.rcParams.update(
        {
            "font.size": 7,
            "axes.titlesize": 7,
            "axes.labelsize": 7,
            "legend.fontsize": 6,
            "xtick.labelsize": 6,
            "ytick.labelsize": 6,
            "svg.hashsalt": "cbalab",
            "lines.markersize": 3,
            "lines.linewidth": 1.0,
        }
    )
    fig, axes = plt.subplots(nrows, ncols, figsize=(width, height), squeeze=False)
    return fig, axes


def plain_log_ticks(axis: Any) -> None:
    """Tick labels of a log axis as plain numbers (0.5, 2, 4) instead of powers of ten."""
    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}"[0] in "1235" else ""))


def strips(
    ax: Any,
    categories: list[str],
    parts: list[tuple[str, Any, Any]],
    step: float,
    ylabel: str,
    marks: Sequence[tuple[float, dict[str, Any]]] = (),
) -> None:
    """Ratios as dots over ``categories`` on the x axis, on a log value axis with plain tick labels.

    Each part is (label, the category of each point, the value of each point); part n is shifted by
    ``step`` × (n − the middle part) so the parts stand side by side.  ``marks`` are horizontal lines
    (value, keywords) drawn over the dots, then a thin grey line at 1 (a ratio of one).
    """
    for n, (label, cats, values) in enumerate(parts):
        x = [categories.index(c) + (n - (len(parts) - 1) / 2) * step for c in cats]
        ax.plot(x, values, "o", ms=2.5, alpha=0.8, label=label)
    for value, kwargs in marks:
        ax.axhline(value, **kwargs)
    ax.axhline(1.0, color="#999999", lw=0.6)
    ax.set_xticks(range(len(categories)), categories, rotation=30, ha="right")
    ax.set(yscale="log", ylabel=ylabel)
    plain_log_ticks(ax.yaxis)


def render(fig: Any) -> dict[str, bytes]:
    """``fig`` encoded in each of :data:`FORMATS` (extension -> bytes); the figure is closed afterwards."""
    out = {}
    for ext, kwargs in FORMATS.items():
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, **kwargs)
        out[ext] = buf.getvalue()
    plt.close(fig)
    return out


def save(fig: Any, outdir: Path, stem: str, *, tight: bool = True) -> list[Path]:
    """Write ``fig`` as ``outdir/stem.pdf`` and ``outdir/stem.png`` (atomically), close it, return both paths.

    ``tight`` lays the panels out with tight_layout first (off for a figure laid out by hand).
    """
    outdir.mkdir(parents=True, exist_ok=True)
    if tight:
        fig.tight_layout()
    return [atomic_write_bytes(outdir / f"{stem}.{ext}", data) for ext, data in render(fig).items()]
