"""What an experiment's rows were computed from, so that staleness is decided by what the runs executed.

A sweep's meta.json records four things under ``provenance`` (docs/adr/0001-staleness-by-provenance.md):

* ``code``: every cbalab module that a run's process had imported once its runs were done (the runs'
  processes report them, :func:`imported_modules`), each with the sha256 of its *normalised* source
  (:func:`code_digest`: the syntax tree without docstrings, comments, layout or annotations), so that an edit
  which changes no computation changes no digest;
* ``data``: the sha256 of every data file a run read (the readers call :func:`note_read`);
* ``params``: the sweep's size, seed and the digest of its grid (the run keys in order);
* ``toolchain``: the Python minor version and the versions of the numerical packages (:data:`TOOLCHAIN`).

:func:`differences` compares a record with the code, data and grid at hand and names what changed.  A module
imported is counted as executed: the record over-approximates (an import that ran no code of a module still
ties the rows to it), never under-approximates, what the rows depend on.  Tracing the functions that ran would
be finer but costs 1.14-1.78x on the replays (measured with sys.settrace on three experiments' runs).
"""

from __future__ import annotations

import ast
import hashlib
import importlib.util
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cbalab.experiments.meta import versions
from cbalab.models.files import sha256_file

#: The packages whose versions can move a row by a last bit (with the Python minor version).
TOOLCHAIN = ("numpy", "pandas", "highspy", "pyomo")

#: The root of the installed package: module files and data files are recorded relative to it when inside.
PACKAGE = "cbalab"

#: Modules that compute no row: the command line, the paper, the figures' style, the ``--list`` table and the
#: verifier (it compares recomputed rows; the runs it calls are recorded as theirs).  A run's process imports
#: some of them (a run module draws its own paper section and figures; a one-worker verification runs in the
#: verifier's process), but no run executes their code; tests/test_provenance.py traces every experiment's
#: quick runs to hold that.  They are neither recorded nor compared: a record made before a module joined this
#: list does not go stale when it changes.  The run module's own ``figures``, ``tables`` and ``paper_section``
#: stay in its digest (the record is per module).
PRESENTATION = (
    "cbalab.cli",
    "cbalab.experiments.about",
    "cbalab.experiments.plotting",
    "cbalab.experiments.paper",
    "cbalab.experiments.verify",
)

#: Data files read in this process (absolute paths), as :func:`note_read` saw them.
_READ: set[str] = set()


def note_read(path: str | Path) -> None:
    """Record that this process read the data file ``path``; every reader of shipped or given data calls it."""
    _READ.add(str(Path(path).resolve()))


def data_read() -> list[str]:
    """The data files this process has read so far (:func:`note_read`), sorted."""
    return sorted(_READ)


def presentation(name: str) -> bool:
    """Whether module ``name`` is one of :data:`PRESENTATION` or inside one of them."""
    return any(name == p or name.startswith(p + ".") for p in PRESENTATION)


def imported_modules() -> list[str]:
    """The cbalab modules imported in this process that come from a source file, sorted, less
    :data:`PRESENTATION`."""
    return sorted(
        name
        for name, mod in list(sys.modules.items())
        if (name == PACKAGE or name.startswith(PACKAGE + "."))
        and str(getattr(mod, "__file__", "") or "").endswith(".py")
        and not presentation(name)
    )


def _strip(tree: ast.AST) -> ast.AST:
    """``tree`` without what cannot change a computation: statement-level string constants (docstrings and the
    like) and the annotations of function arguments and returns."""
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list):
            kept = [
                s
                for s in body
                if not (
                    isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant) and isinstance(s.value.value, str)
                )
            ]
            node.body = kept or [ast.Pass()]  # type: ignore[attr-defined]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            node.returns = None
        if isinstance(node, ast.arg):
            node.annotation = None
    return tree


def code_digest(source: str) -> str:
    """The sha256 of ``source``'s normalised syntax tree: equal for two sources that differ only in docstrings,
    comments, layout or function annotations."""
    tree = _strip(ast.parse(source))
    return hashlib.sha256(ast.dump(tree, annotate_fields=True, include_attributes=False).encode()).hexdigest()


def module_file(name: str) -> Path | None:
    """The source file of module ``name`` as this installation resolves it (None when there is none)."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin)


def module_digest(name: str) -> str | None:
    """:func:`code_digest` of module ``name``'s source here (None when the module is gone or does not parse)."""
    path = module_file(name)
    if path is None or not path.is_file():
        return None
    try:
        return code_digest(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return None


def _root() -> Path:
    """The folder data paths are recorded relative to: the repository (or site-packages) holding cbalab."""
    return Path(__file__).resolve().parent.parent


def data_key(path: str | Path) -> str:
    """How a data file is named in the record: relative to :func:`_root` when inside it, else absolute."""
    p = Path(path).resolve()
    try:
        return p.relative_to(_root()).as_posix()
    except ValueError:
        return str(p)


def data_path(key: str) -> Path:
    """The file a recorded data key names here (:func:`data_key` in reverse)."""
    p = Path(key)
    return p if p.is_absolute() else _root() / p


def toolchain() -> dict[str, str | None]:
    """The Python minor version and the installed versions of :data:`TOOLCHAIN` (None when missing)."""
    return {"python": f"{sys.version_info.major}.{sys.version_info.minor}", **versions(TOOLCHAIN)}


def grid_digest(keys: Iterable[str]) -> str:
    """The sha256 of a grid's run keys in order: the parameters of every run, in one value."""
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def record(modules: Iterable[str], data: Iterable[str], params: dict[str, Any]) -> dict[str, Any]:
    """meta.json's ``provenance``: the digests of ``modules`` and ``data`` as they are now, ``params``, the
    toolchain.  A module or file that cannot be read is recorded as None (and so counts as changed later)."""
    files: dict[str, str | None] = {}
    for path in sorted(set(data)):
        p = Path(path)
        files[data_key(p)] = sha256_file(p) if p.is_file() else None
    return {
        "code": {name: module_digest(name) for name in sorted(set(modules))},
        "data": files,
        "params": params,
        "toolchain": toolchain(),
    }


def differences(prov: dict[str, Any], params: dict[str, Any] | None = None) -> list[str]:
    """What differs between the record ``prov`` and this installation: each changed or missing module (less
    :data:`PRESENTATION`), each changed or missing data file, each parameter of ``params`` (the sweep's current
    ones) that differs.  The toolchain is not here (:func:`toolchain_differences`): a version change is decided
    by the canaries."""
    out = []
    for name, digest in sorted((prov.get("code") or {}).items()):
        if presentation(name):
            continue
        now = module_digest(name)
        if now is None:
            out.append(f"module {name} is gone")
        elif now != digest:
            out.append(f"module {name} changed ({module_file(name)})")
    for key, digest in sorted((prov.get("data") or {}).items()):
        p = data_path(key)
        if not p.is_file():
            out.append(f"data file {key} is missing")
        elif sha256_file(p) != digest:
            out.append(f"data file {key} changed")
    for key, value in sorted((params or {}).items()):
        old = (prov.get("params") or {}).get(key)
        if old != value:
            out.append(f"parameter {key} was {old!r}, is {value!r}")
    return out


def toolchain_differences(prov: dict[str, Any]) -> list[str]:
    """Each toolchain entry of ``prov`` that differs from this installation's, as "numpy 2.1.0 -> 2.2.1"."""
    now = toolchain()
    old = prov.get("toolchain") or {}
    return [f"{k} {old.get(k)} -> {now.get(k)}" for k in sorted(now) if old.get(k) != now.get(k)]
