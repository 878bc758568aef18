"""Job traces: the Philly trace and the generic CSV form (docs/interface.md, "Traces and simulation output")."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path
from typing import IO

import numpy as np
import pandas as pd

from cbalab.experiments.provenance import note_read
from cbalab.models.files import unreadable
from cbalab.models.instance import MAX_COUNT, InstanceError

#: The Philly trace's columns (docs/interface.md, "Traces and simulation output").
PHILLY_COLUMNS = ("timestamp", "duration", "num_gpus", "gpu_time", "cluster")
#: The generic trace's required and optional columns.
TRACE_COLUMNS = ("submit_time_s", "duration_s", "gpus")
TRACE_OPTIONAL = ("job_id", "model", "dataset")
#: What is taken as padding around a field: ASCII blanks only.  A non-breaking or other Unicode space is part of
#: the field, so that a number written with one is refused by name rather than read as if it were not there.
PADDING = " \t\r\n\f\v"

#: Largest submit time and duration accepted, in seconds (about 31,700 years).  Beyond it a duration added to a
#: submit time loses its last second (doubles carry 53 bits: at 1e308, submit + 3600 == submit, a JCT of 0).
MAX_TRACE_SECONDS = 1e12

#: Shortest duration accepted, in seconds.  At submit times up to MAX_TRACE_SECONDS doubles resolve 1.2e-4 s, so
#: a job of at least a millisecond always ends after its submission (a shorter one could get a JCT of 0).
MIN_DURATION_S = 1e-3


class TraceError(InstanceError):
    """A bad trace file: the message names the file, the line and the column (CLI exit 2)."""

    def __init__(self, source: str, line: int, column: str, value: object, problem: str) -> None:
        self.line = line
        self.column = column
        super().__init__(f"{source}: line {line}, column {column!r}", value, problem)


def _open_text(p: Path) -> IO[str]:
    """``p`` opened for reading as UTF-8 text, through gzip when its name ends in ``.gz``; noted as read
    (experiments/provenance.py), so that the rows computed from it go stale when it changes."""
    note_read(p)
    if p.suffix == ".gz":
        return gzip.open(p, "rt", newline="", encoding="utf-8")
    return p.open(newline="", encoding="utf-8")


def load_trace(path: str | Path) -> pd.DataFrame:
    """Read a job trace (generic or Philly form) into a DataFrame sorted by submit time.

    Columns: ``line`` (of the file), ``job_id``, ``submit_s`` (from the
    earliest submission in the Philly form, as written in the generic form),
    ``duration_s``, ``gpus``, ``model`` and ``dataset`` ("" when not pinned).
    A path ending in ``.gz`` is read through gzip (the shipped Philly trace is
    ``philly_jobs.csv.gz``, cbalab.experiments.data).  Blank lines are skipped
    (the Philly file ends with one); a line of empty fields (``,,,``, a DataFrame row of NaN) is a row like
    any other, so its first required cell is refused rather than the job dropped.  Every bad value raises
    :class:`TraceError` naming the line and the column: GPU counts
    must be whole numbers in [1, MAX_COUNT] (the instance loader's cap, so no
    count wraps in int64), durations in [MIN_DURATION_S, MAX_TRACE_SECONDS],
    submit times in [−MAX_TRACE_SECONDS, MAX_TRACE_SECONDS]; a column named twice in the header is refused
    (which of the two would count is not for the reader to guess).  Negative submit times are
    accepted as written ("seconds from any origin", docs/interface.md): the
    replay starts at the first submission whatever its sign.
    """
    p = Path(path)
    source = str(path)
    try:
        with _open_text(p) as f:
            reader = csv.reader(f)
            header = next(reader, None)
            rows: list[list[str]] = []
            lines: list[int] = []
            for row in reader:
                if len(row) <= 1 and not "".join(row).strip(PADDING):  # a blank line; a row of empty fields is refused
                    continue
                rows.append(row)
                lines.append(reader.line_num)
    except OSError as e:
        raise InstanceError("trace", str(path), unreadable(e)) from None
    except (EOFError, UnicodeDecodeError, csv.Error) as e:
        raise InstanceError("trace", str(path), f"cannot be read ({e.__class__.__name__}: {e})") from None
    except MemoryError:
        raise InstanceError("trace", str(path), "out of memory while reading the file") from None
    if header is None:
        raise TraceError(source, 1, "header", None, "empty file: expected a header line")
    header = [h.strip(PADDING) for h in header]
    named: set[str] = set()
    for name in header:
        if name in named:
            raise TraceError(source, 1, name, header, "column given twice in the header; the trace is ambiguous")
        named.add(name)
    philly = set(PHILLY_COLUMNS) <= set(header)
    required = ("timestamp", "duration", "num_gpus") if philly else TRACE_COLUMNS
    for col in required:
        if col not in header:
            raise TraceError(source, 1, col, header, "required column missing from the header")
    for i, row in enumerate(rows):
        if len(row) != len(header):
            raise TraceError(source, lines[i], "*", row, f"has {len(row)} fields, the header has {len(header)}")
    line = np.asarray(lines, dtype=np.int64)
    cols = {h: [r[i].strip(PADDING) for r in rows] for i, h in enumerate(header)}

    def number(col: str, *, low: float, integer: bool) -> np.ndarray:
        """The column as floats in [low, top], top MAX_COUNT for counts and MAX_TRACE_SECONDS for times."""
        values = pd.to_numeric(pd.Series(cols[col], dtype=object), errors="coerce").to_numpy(dtype=float)
        top = MAX_COUNT if integer else MAX_TRACE_SECONDS
        with np.errstate(invalid="ignore"):
            ok = np.isfinite(values) & (values <= top) & (values >= low)
        if integer:
            ok &= values == np.floor(values)
        bad = np.flatnonzero(~ok)
        if bad.size:
            span = f"a whole number in [{low:.0f}, {top}]" if integer else f"a number in [{low:g}, {top:g}]"
            raise TraceError(source, int(line[bad[0]]), col, cols[col][bad[0]], f"must be {span}")
        return values

    if philly:
        stamps = pd.to_datetime(pd.Series(cols["timestamp"]), format="%Y-%m-%d %H:%M:%S", errors="coerce")
        bad = np.flatnonzero(stamps.isna().to_numpy())
        if bad.size:
            raise TraceError(
                source, int(line[bad[0]]), "timestamp", cols["timestamp"][bad[0]], "not YYYY-MM-DD HH:MM:SS"
            )
        seconds = (stamps - stamps.min()).dt.total_seconds().to_numpy() if len(rows) else np.zeros(0)
        duration = number("duration", low=MIN_DURATION_S, integer=False)
        gpus = number("num_gpus", low=1, integer=True)
        ids = [f"philly-{n}" for n in line]
        model = dataset = [""] * len(rows)
    else:
        seconds = number("submit_time_s", low=-MAX_TRACE_SECONDS, integer=False)
        duration = number("duration_s", low=MIN_DURATION_S, integer=False)
        gpus = number("gpus", low=1, integer=True)
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
    frame.attrs["gpus_column"] = "num_gpus" if philly else "gpus"
    return frame.sort_values("submit_s", kind="stable").reset_index(drop=True)
