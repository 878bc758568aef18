"""Where the data shipped with cbalab lives: the Philly trace, Gavel's throughputs, Pollux's step times.

The files are package data of ``cbalab.data`` (the repository's data/ folder,
with each source's licence and attribution), so that a fresh clone or an
installed wheel replays the Philly trace without any other download.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

#: Name -> path of the shipped file or folder, relative to the data package.
SHIPPED = {
    "philly": "philly/philly_jobs.csv.gz",
    "gavel": "gavel/isolated_throughputs.csv",
    "pollux": "pollux-scalability",
}


def data_root() -> Path:
    """The folder of the shipped data (holds gavel/ and pollux-scalability/ as check_catalog expects)."""
    return Path(str(files("cbalab.data")))


def data_path(name: str) -> Path:
    """The shipped file or folder ``name`` (one of :data:`SHIPPED`); ValueError naming the known names otherwise."""
    if name not in SHIPPED:
        raise ValueError(f"no shipped data {name!r}; known: {', '.join(SHIPPED)}")
    path = data_root() / SHIPPED[name]
    if not path.exists():
        raise FileNotFoundError(f"shipped data {name!r} is missing at {path} (a broken install?)")
    return path
