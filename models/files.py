"""Atomic output files: every file cbalab writes goes through here.

A file is written to a temporary name in its own folder, flushed to disk and
then renamed over the target (``os.replace`` is atomic on one file system), so
a reader, a concurrent writer or an interruption never sees half a file: the
target holds either the old complete content or the new complete content.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pandas as pd


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, fsync, rename)."""
    target = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def atomic_write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | Path, doc: Any) -> Path:
    """Write ``doc`` as strict JSON (NaN and infinities refused) atomically, one trailing newline."""
    return atomic_write_text(path, json.dumps(doc, indent=1, allow_nan=False) + "\n")


def atomic_write_csv(path: str | Path, frame: pd.DataFrame) -> Path:
    """Write ``frame`` as CSV without its index, atomically."""
    return atomic_write_text(path, frame.to_csv(index=False))


def sha256_file(path: str | Path) -> str:
    """The hex sha256 of a file's bytes (summary files record it for each file they describe)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()
