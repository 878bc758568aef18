"""Atomic output files, and the one wording of every file error.

A file is written to a temporary name in its own folder, flushed to disk and
then renamed over the target (``os.replace`` is atomic on one file system), so
a reader, a concurrent writer or an interruption never sees half a file: the
target holds either the old complete content or the new complete content.

Every message about a file that cannot be read or written, whichever command
or function meets it (an instance, a trace, an ``--out``, a results folder),
comes from :func:`unreadable`, :func:`unwritable_file` or
:func:`unwritable_folder`, so that a missing instance and a missing trace read
alike: ``FIELD: no such file (got "PATH")``, exit 2 on the command line.

JSON is parsed by :func:`loads_json`, which refuses an object that gives one key twice: Python's parser
keeps the last value without a word while other parsers keep the first or refuse, so such a document means
different things to different readers (a second ``"jobs": []`` emptied an instance).
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd


class RepeatedKeyError(ValueError):
    """A JSON object gives one key more than once: ``path`` is the key's JSON path (``datasets[0].size_gb``),
    ``values`` every value it was given there, in the order of the text."""

    def __init__(self, path: str, values: list[Any]) -> None:
        self.path = path
        self.values = values
        super().__init__(f"{path}: key given {len(values)} times in one object")


class _Repeated(dict[str, Any]):
    """A parsed object that gave a key twice, with every (key, value) pair as written (``given``)."""

    given: list[tuple[str, Any]]


def loads_json(text: str, **options: Any) -> Any:
    """``json.loads(text, **options)``, refusing an object that gives one key twice (:class:`RepeatedKeyError`).

    The first such object met in a walk from the root, outer before inner and in document order, is the one
    named; a malformed text raises ``json.JSONDecodeError`` as ``json.loads`` does.
    """
    repeated: list[_Repeated] = []

    def pairs(given: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(given)
        if len(obj) == len(given):
            return obj
        marked = _Repeated(obj)
        marked.given = given
        repeated.append(marked)
        return marked

    doc = json.loads(text, object_pairs_hook=pairs, **options)
    if repeated:
        raise _first_repeated(doc)
    return doc


def _first_repeated(doc: Any) -> RepeatedKeyError:
    """The error naming the first repeated key of ``doc`` (a walk without recursion: any depth parses)."""
    stack: list[tuple[str, Any]] = [("", doc)]
    while stack:
        where, node = stack.pop()
        if isinstance(node, _Repeated):
            counts = Counter(k for k, _ in node.given)
            key = next(k for k, _ in node.given if counts[k] > 1)
            return RepeatedKeyError(f"{where}.{key}" if where else key, [v for k, v in node.given if k == key])
        if isinstance(node, dict):
            stack.extend(reversed([(f"{where}.{k}" if where else str(k), v) for k, v in node.items()]))
        elif isinstance(node, list):
            stack.extend(reversed([(f"{where}[{i}]", v) for i, v in enumerate(node)]))
    raise AssertionError("every marked object hangs below the root")


#: Why a path that is neither a file nor a folder (a device, a pipe, a socket, a link loop) cannot take an output.
NOT_REGULAR = "is not a regular file (a device, pipe, socket or link loop): outputs are written whole, then renamed"


class NotARegularFileError(OSError):
    """An output path that exists and is not a regular file (:data:`NOT_REGULAR`)."""

    def __init__(self, path: str) -> None:
        super().__init__(f"{path}: {NOT_REGULAR}")


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (temporary file in the same folder, fsync, rename).

    A symbolic link is written through: the file it points to is replaced and the link kept.  Anything else
    that is not a regular file (a device such as /dev/null, a pipe, a socket, a link that resolves to no path)
    is refused with :class:`NotARegularFileError` (a folder with IsADirectoryError), as a rename would put a
    regular file in its place.  Returns ``path`` as given.
    """
    target = _written(path)
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
    return Path(path)


def _written(path: str | Path) -> Path:
    """The file an output at ``path`` replaces: ``path`` with its links resolved; errors as atomic_write_bytes."""
    target = Path(os.path.realpath(path))
    if target.is_dir():
        raise IsADirectoryError(f"{path}: is a folder, not a file")
    if target.is_symlink() or (target.exists() and not target.is_file()):  # a link left is a loop
        raise NotARegularFileError(str(path))
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


def unreadable(error: OSError) -> str:
    """Why a file could not be read, from the OSError that reading it raised: "no such file", "is a folder,
    not a file", "permission denied", or "cannot be read (ErrorName: reason)"."""
    if isinstance(error, FileNotFoundError):
        return "no such file"
    if isinstance(error, IsADirectoryError):
        return "is a folder, not a file"
    if isinstance(error, NotADirectoryError):
        return "no such file (a folder on its path is a file)"
    if isinstance(error, PermissionError):
        return "permission denied"
    return f"cannot be read ({type(error).__name__}: {error.strerror or error})"


def too_long(path: str | Path) -> str | None:
    """Why ``path`` is too long for the file system (None if it is not): a part of it longer than the folder's
    longest name (``PC_NAME_MAX``, 255 bytes where the system does not say), or the whole longer than
    ``PC_PATH_MAX`` (4,096 bytes).  Asked before anything looks at the path, as the system's own answer is an
    OSError ("File name too long") from whichever call touches it first."""
    whole = os.fsencode(os.path.abspath(path))
    name_max, path_max = _limit("PC_NAME_MAX", 255), _limit("PC_PATH_MAX", 4096)
    if len(whole) >= path_max:
        return f"the path is {len(whole)} bytes long, and this system takes at most {path_max - 1}"
    longest = max(whole.split(b"/"), key=len)
    if len(longest) > name_max:
        return f"a name on the path is {len(longest)} bytes long, and this system takes at most {name_max}"
    return None


def _limit(name: str, default: int) -> int:
    """The system's path limit ``name`` for the root folder (os.pathconf), or ``default`` where it does not say."""
    try:
        value = os.pathconf("/", name)
    except (OSError, ValueError):
        return default
    return value if value > 0 else default


def unwritable_file(path: str | Path) -> str | None:
    """Why a file cannot be written at ``path`` (None if it can): ``path`` is too long (:func:`too_long`), a
    folder or another thing that is not a regular file (:func:`atomic_write_bytes` would replace it), or its
    folder is missing or refuses a new file (tried for real, with a temporary file removed at once: permission
    bits do not bind root, a read-only file system does).  A symbolic link is judged by what it points to,
    which is what gets written."""
    long = too_long(path)
    if long is not None:
        return long
    target = Path(os.path.realpath(path))
    folder = target.parent
    if target.is_dir():
        return "is a folder, not a file"
    if target.is_symlink() or (target.exists() and not target.is_file()):
        return NOT_REGULAR
    if not folder.is_dir():
        return f"no such folder {str(folder)!r}"
    return _refused(folder)


def same_file(a: str | Path, b: str | Path) -> bool:
    """Whether ``a`` and ``b`` are one existing file (os.path.samefile: through links, hard links and spellings
    such as ``./x``), so that an output is never written over the input it is computed from; False when either
    does not exist."""
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def unwritable_folder(path: str | Path) -> str | None:
    """Why ``path`` cannot be, or be made, a writable folder (None if it can): it is a file, a file stands on
    its path, or the nearest existing folder refuses a new file (tried for real, as in unwritable_file), or the
    path is too long (:func:`too_long`)."""
    long = too_long(path)
    if long is not None:
        return long
    target = Path(path)
    if target.exists() and not target.is_dir():
        return "is a file, not a folder"
    existing = next(p for p in (target, *target.parents) if p.exists())
    if not existing.is_dir():
        return f"no such folder ({str(existing)!r} on its path is a file)"
    return _refused(existing)


def _refused(folder: Path) -> str | None:
    """Why ``folder`` refuses a new file ("permission denied: ..."), or None once a temporary file was made
    and removed there."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=".cbalab-probe.", dir=folder)
    except OSError as e:
        reason = "permission denied" if isinstance(e, PermissionError) else f"{type(e).__name__}: {e.strerror or e}"
        return f"{reason}: the folder {str(folder)!r} takes no new file"
    os.close(fd)
    os.unlink(tmp)
    return None
