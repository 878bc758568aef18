"""One statement of a linear model, emitted twice: to Pyomo (to read) and to arrays for highspy (to solve).

Every formulation of models/milp (P1 of docs/model.md §4, P2 and P2s of §5 with their integer variants, P3 of
§6) is written once, as a :class:`Statement`: named blocks of columns (variables, with bounds, costs, integrality)
and named groups of rows, each group made by one row function that cites the equation it states.  A row function
returns its rows as vectorised coordinate triples (row, column, coefficient) plus bounds, so it costs numpy time
and no Python loop per row.  Nothing else states a row.  Two emitters derive the solver forms:

* :meth:`Statement.compile` gives :class:`Arrays`, the row-wise sparse matrix HiGHS solves (highspy);
* :meth:`Statement.pyomo` gives a Pyomo ``ConcreteModel`` with one ``Var`` per block and one ``Constraint`` per
  group, named as the groups are (what ``cbalab.build_model`` returns; ``model.pprint()`` reads it).

Both take ``scaled``: the model as docs/model.md writes it, or the same rows in the units HiGHS solves
(docs/model.md §8), obtained mechanically from the statement.  Each column j declares a unit u_j (x_j = u_j x'_j),
each row i a divisor d_i > 0, and the statement an objective unit M: the scaled model has coefficients
a_ij u_j / d_i, row bounds L_i / d_i and U_i / d_i, column bounds l_j / u_j and h_j / u_j and costs c_j u_j / M.
A positive diagonal scaling changes no solution (x = u x'), so the optimum of either is the optimum of the other
(times M).  A row function names each column at most once per row (HiGHS refuses a repeated index).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple, ParamSpec

import highspy
import numpy as np
import pyomo.environ as pyo
from pyomo.core.expr.numeric_expr import LinearExpression, MonomialTermExpression

Params = ParamSpec("Params")


class Rows(NamedTuple):
    """What a row function returns: entry e is ``coef[e]`` at (``row[e]``, column ``col[e]``); row i reads
    ``lo[i] ≤ Σ coef·x ≤ hi[i]`` (±inf: no bound) and is divided by ``divisor[i]`` when scaled."""

    row: np.ndarray
    col: np.ndarray
    coef: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    divisor: np.ndarray | float = 1.0


@dataclass(frozen=True)
class Group:
    """A named group of rows (:class:`Rows`) with the first line of its row function's docstring."""

    name: str
    doc: str
    rows: Rows

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.rows.lo.size)


def group(fn: Callable[Params, Rows]) -> Callable[Params, Group]:
    """Make a row function return a :class:`Group` named after it (so a formulation names each group once)."""

    @functools.wraps(fn)
    def named(*args: Params.args, **kwargs: Params.kwargs) -> Group:
        return Group(fn.__name__, (fn.__doc__ or "").strip().split("\n")[0], fn(*args, **kwargs))

    return named


def stack(*parts: tuple[np.ndarray, np.ndarray | float, np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row, col, coef) of rows written as terms: each part gives per-row columns, coefficients and row numbers.

    A term with a negative column (no such variable, e.g. the fill before a dataset's first slot) is left out,
    and so is a coefficient of 0.
    """
    first = np.asarray(parts[0][2], dtype=np.int64)
    if len(parts) > 1 and all(p[2] is parts[0][2] for p in parts) and not np.any(first[1:] < first[:-1]):
        # the same rows in every part (one term per row each): interleaved, the entries come sorted by row
        col2, c2 = np.empty((first.size, len(parts)), dtype=np.int64), np.empty((first.size, len(parts)))
        for i, (part_col, part_coef, _) in enumerate(parts):
            col2[:, i], c2[:, i] = part_col, part_coef
        col, c = col2.ravel(), c2.ravel()
        keep = (col >= 0) & (c != 0)
        return np.repeat(first, len(parts))[keep], col[keep], c[keep]
    rows, cols, coefs = [], [], []
    for col, coef, row in parts:
        col = np.asarray(col, dtype=np.int64)
        c = np.broadcast_to(np.asarray(coef, dtype=float), col.shape)
        keep = (col >= 0) & (c != 0)
        rows.append(np.asarray(row, dtype=np.int64)[keep])
        cols.append(col[keep])
        coefs.append(c[keep])
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(coefs)


def no_rows() -> Rows:
    """An empty group (a limit that is unlimited for this instance)."""
    empty = np.zeros(0, dtype=np.int64)
    return Rows(empty, empty, np.zeros(0), np.zeros(0), np.zeros(0))


def limit_row(col: np.ndarray, coef: np.ndarray | float, limit: float, written: float, fallback: float = 1.0) -> Rows:
    """One row Σ coef·x ≤ ``limit``, divided when scaled by the limit as ``written`` (by ``fallback`` when that
    is 0, by 1 when both are): a capacity or budget row in the units of its own limit (docs/model.md §8)."""
    row, c, v = stack((col, coef, np.zeros(np.size(col), dtype=np.int64)))
    divisor = written if written > 0 else (fallback if fallback > 0 else 1.0)
    return Rows(row, c, v, np.full(1, -math.inf), np.full(1, float(limit)), divisor)


@dataclass(frozen=True)
class Block:
    """Columns ``first`` … ``first + size − 1`` named ``name``, indexed by the set ``index`` in Pyomo."""

    name: str
    index: str
    first: int
    size: int
    doc: str

    @property
    def columns(self) -> np.ndarray:
        """The block's column numbers."""
        return np.arange(self.first, self.first + self.size)


@dataclass
class Statement:
    """A linear model ``sense`` cᵀx + offset s.t. the rows of ``groups`` and the column bounds; see the module."""

    name: str
    sense: str = "min"
    objective_unit: float = 1.0
    offset: float = 0.0
    blocks: dict[str, Block] = field(default_factory=dict)
    groups: list[Group] = field(default_factory=list)
    #: What the formulation keeps beside its rows for reading a solution (P3's layout).
    data: dict[str, Any] = field(default_factory=dict)
    _cols: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = field(default_factory=list)

    @property
    def n_cols(self) -> int:
        """Number of columns declared so far."""
        return sum(b.size for b in self.blocks.values())

    def columns(
        self,
        name: str,
        index: str,
        size: int,
        *,
        lower: np.ndarray | float = 0.0,
        upper: np.ndarray | float = math.inf,
        cost: np.ndarray | float = 0.0,
        integer: np.ndarray | bool = False,
        unit: np.ndarray | float = 1.0,
        doc: str = "",
    ) -> np.ndarray:
        """Declare a block of ``size`` columns; returns their numbers (the next free ones)."""
        block = Block(name, index, self.n_cols, size, doc)
        self.blocks[name] = block
        self._cols.append(
            tuple(np.broadcast_to(np.asarray(v, dtype=float), (size,)) for v in (lower, upper, cost, integer, unit))  # type: ignore[arg-type]
        )
        return block.columns

    def add(self, g: Group, tag: str = "") -> None:
        """Add a group of rows, named ``g.name + tag`` (a tag tells apart the groups one row function makes for
        several parameters); an empty group is kept: it names a row set that is empty for this instance."""
        self.groups.append(replace(g, name=g.name + tag) if tag else g)

    def compile(self, *, scaled: bool = False) -> Arrays:
        """The model as a row-wise sparse matrix (CSR), scaled or not (module docstring)."""
        lower, upper, cost, integer, unit = (np.concatenate([c[i] for c in self._cols]) for i in range(5))
        if not scaled:
            unit = np.ones_like(unit)
        n_rows, rows, cols, vals, los, his, spans = 0, [], [], [], [], [], {}
        for g in self.groups:
            row, col, val, lo, hi, divisor = g.rows
            if row.size and np.any(row[1:] < row[:-1]):
                order = np.argsort(row, kind="stable")
                row, col, val = row[order], col[order], val[order]
            if scaled:
                div = np.broadcast_to(np.asarray(divisor, dtype=float), lo.shape)
                val, lo, hi = val * unit[col] / div[row], lo / div, hi / div
            rows.append(row + n_rows)
            cols.append(col)
            vals.append(val)
            los.append(lo)
            his.append(hi)
            spans[g.name] = slice(n_rows, n_rows + g.size)
            n_rows += g.size
        row, col, val, row_lo, row_hi = (np.concatenate(p) if p else np.zeros(0) for p in (rows, cols, vals, los, his))
        row = row.astype(np.int64)
        start = np.zeros(n_rows + 1, dtype=np.int32)
        np.cumsum(np.bincount(row, minlength=n_rows), out=start[1:])
        m = self.objective_unit if scaled else 1.0
        return Arrays(
            cost=cost * unit / m,
            col_lo=lower / unit,
            col_hi=upper / unit,
            integral=integer > 0,
            start=start,
            index=col.astype(np.int32),
            value=val,
            row_lo=row_lo.astype(float),
            row_hi=row_hi.astype(float),
            maximize=self.sense == "max",
            offset=self.offset / m,
            objective_scale=m,
            unit=unit,
            blocks={name: slice(b.first, b.first + b.size) for name, b in self.blocks.items()},
            rows=spans,
        )

    def pyomo(self, *, scaled: bool = False) -> pyo.ConcreteModel:
        """The model as a Pyomo ConcreteModel: a Var per block, a Constraint per group (each row with a bound),
        named as in the statement; the same numbers as :meth:`compile` with the same ``scaled``.

        ``model.statement`` is this statement and ``model.arrays`` its compiled form, so that a solution read
        from the variables (:func:`solution`) is interpreted by the same column numbers.
        """
        a = self.compile(scaled=scaled)
        m = pyo.ConcreteModel(name=self.name)
        m.statement = self
        m.arrays = a
        columns: list[Any] = []
        for b in self.blocks.values():
            if not hasattr(m, b.index):
                setattr(m, b.index, pyo.RangeSet(0, b.size - 1))
            part = slice(b.first, b.first + b.size)
            lo, hi, whole = a.col_lo[part], a.col_hi[part], a.integral[part]
            var = pyo.Var(getattr(m, b.index), domain=pyo.Reals, doc=b.doc)
            setattr(m, b.name, var)
            for i in range(b.size):
                v = var[i]
                v.setlb(None if math.isinf(lo[i]) else float(lo[i]))
                v.setub(None if math.isinf(hi[i]) else float(hi[i]))
                if whole[i]:
                    v.domain = pyo.Integers
                columns.append(v)
        for g in self.groups:
            span = a.rows[g.name]
            block = pyo.ConstraintList(doc=g.doc)
            setattr(m, g.name, block)
            for i in range(span.start, span.stop):
                lo, hi = a.row_lo[i], a.row_hi[i]
                if math.isinf(lo) and math.isinf(hi):
                    continue  # a free row states nothing (the GPU count of P2 before a slice sets it)
                cut = slice(int(a.start[i]), int(a.start[i + 1]))
                body = _linear(a.value[cut].tolist(), [columns[j] for j in a.index[cut]])
                block.add((None if math.isinf(lo) else float(lo), body, None if math.isinf(hi) else float(hi)))
        nz = np.flatnonzero(a.cost)
        m.objective = pyo.Objective(
            expr=_linear(a.cost[nz].tolist(), [columns[j] for j in nz], float(a.offset)),
            sense=pyo.maximize if a.maximize else pyo.minimize,
        )
        return m


def _linear(coefs: list[float], variables: list[Any], constant: float = 0.0) -> LinearExpression:
    """Σ coef·var (+ constant) as one Pyomo LinearExpression; a coefficient of 1 is the variable itself."""
    terms = [v if c == 1.0 else MonomialTermExpression((c, v)) for c, v in zip(coefs, variables, strict=True)]
    return LinearExpression([constant, *terms] if constant else terms)


def solution(model: pyo.ConcreteModel) -> np.ndarray:
    """The values of a model of :meth:`Statement.pyomo`, as a vector of its compiled columns (unset: nan)."""
    values = [
        np.fromiter((np.nan if v.value is None else v.value for v in getattr(model, name).values()), dtype=float)
        for name in model.statement.blocks
    ]
    return np.concatenate(values) if values else np.zeros(0)


@dataclass(frozen=True)
class Arrays:
    """A compiled :class:`Statement`: optimise cost·x (+ offset) s.t. row_lo ≤ A x ≤ row_hi, col_lo ≤ x ≤ col_hi.

    A is row-wise CSR (``start``, ``index``, ``value``); ``integral`` marks whole columns; ``blocks`` and
    ``rows`` give each block's columns and each group's rows.  When scaled, x is in the scaled units: the
    instance's value of column j is ``unit[j] · x[j]`` and the objective ``objective_scale · (cost·x + offset)``.
    """

    cost: np.ndarray
    col_lo: np.ndarray
    col_hi: np.ndarray
    integral: np.ndarray
    start: np.ndarray
    index: np.ndarray
    value: np.ndarray
    row_lo: np.ndarray
    row_hi: np.ndarray
    maximize: bool
    offset: float
    objective_scale: float
    unit: np.ndarray
    blocks: dict[str, slice]
    rows: dict[str, slice]

    @property
    def n_cols(self) -> int:
        """Number of columns."""
        return int(self.cost.size)

    @property
    def n_rows(self) -> int:
        """Number of rows."""
        return int(self.row_lo.size)

    def part(self, name: str, x: np.ndarray) -> np.ndarray:
        """Block ``name`` of a solution vector, as the solver sees it (scaled units)."""
        return x[self.blocks[name]]

    def value_of(self, name: str, x: np.ndarray) -> np.ndarray:
        """Block ``name`` of a solution vector in the instance's units."""
        return x[self.blocks[name]] * self.unit[self.blocks[name]]

    def objective(self, x: np.ndarray) -> float:
        """The objective of a solution vector in the instance's units (powers-of-two scales are undone exactly)."""
        return (float(self.cost @ x) + self.offset) * self.objective_scale

    def activity(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(A x, Σ_j abs(a_ij · x_j)) per row, in numpy: the activity of each row and the size of its terms."""
        rows = np.repeat(np.arange(self.n_rows), np.diff(self.start))
        terms = self.value * x[self.index]
        return (
            np.bincount(rows, weights=terms, minlength=self.n_rows),
            np.bincount(rows, weights=np.abs(terms), minlength=self.n_rows),
        )

    def fits(self, x: np.ndarray, tol: float = 1e-12) -> bool:
        """Whether ``x`` meets every row and column bound to a relative ``tol`` and is whole where it must be.

        The check a warm start passes before it may count as an incumbent (proofs/welfare_milp_forms.md,
        Theorem F4 (iii)): the rows already hold the referee's slack, so ``tol`` covers rounding only.
        """
        if x.shape != (self.n_cols,) or not np.all(np.isfinite(x)):
            return False
        slack_col = tol * np.maximum(1.0, np.abs(x))
        if np.any(x < self.col_lo - slack_col) or np.any(x > self.col_hi + slack_col):
            return False
        whole = x[self.integral]
        if np.any(np.abs(whole - np.rint(whole)) > tol):
            return False
        activity, size = self.activity(x)
        slack_row = tol * np.maximum(1.0, size)
        return bool(np.all(activity <= self.row_hi + slack_row) and np.all(activity >= self.row_lo - slack_row))

    def with_rows(self, name: str, lo: np.ndarray | float, hi: np.ndarray | float) -> Arrays:
        """The same model with the bounds of group ``name``'s rows set to [lo, hi] (no rebuild)."""
        row_lo, row_hi = self.row_lo.copy(), self.row_hi.copy()
        row_lo[self.rows[name]], row_hi[self.rows[name]] = lo, hi
        return replace(self, row_lo=row_lo, row_hi=row_hi)

    def pass_to(self, h: highspy.Highs, cost_scale: float = 1.0) -> None:
        """Pass the model to ``h`` (row-wise matrix, ±inf as HiGHS's infinity), its objective (costs and offset)
        divided by ``cost_scale``.

        Through passModel's array form, which takes each array whole: a HighsLp's setters convert element by element,
        9 of the 10 ms that passing one 2,000-pair chunk of P3 took.  Dividing by ``cost_scale`` = 1 keeps the
        objective.  Its indices are 32-bit: a model with 2^31 entries or more is refused (ValueError), not wrapped.
        """
        if self.index.size >= 2**31 or self.n_cols >= 2**31 or self.n_rows >= 2**31:
            raise ValueError(f"a model of {self.index.size} entries is beyond HiGHS's 32-bit indices")
        inf = highspy.kHighsInf
        h.passModel(
            self.n_cols,
            self.n_rows,
            int(self.index.size),
            int(highspy.MatrixFormat.kRowwise),
            int(highspy.ObjSense.kMaximize if self.maximize else highspy.ObjSense.kMinimize),
            float(self.offset / cost_scale),
            np.asarray(self.cost / cost_scale, dtype=float),
            np.asarray(self.col_lo, dtype=float),
            np.minimum(self.col_hi, inf),
            np.maximum(self.row_lo, -inf),
            np.minimum(self.row_hi, inf),
            np.asarray(self.start[:-1], dtype=np.int32),
            np.asarray(self.index, dtype=np.int32),
            np.asarray(self.value, dtype=float),
            np.asarray(self.integral, dtype=np.int32),
        )

    def relaxed(self) -> Arrays:
        """The same model without integrality (its LP relaxation)."""
        return replace(self, integral=np.zeros_like(self.integral))
