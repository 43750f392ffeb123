"""Small dense matrices and vectors of per-event expressions (laddu's ``matrix``, ``vector``,
``matmul``/``@``, ``matvec``, ``dot``, ``solve``).

A :class:`Matrix` or :class:`Vector` is a fixed-shape container of scalar expression nodes,
so every product is a sum of scalar products and :func:`solve` is unrolled into scalar
operations: the compiled kernels (array, fused CPU, CUDA) need nothing new, the reverse
sweep differentiates through the solve exactly, and event-only entries are cached by the
event / parameter split like any other node.  Select entries with ``vector[i]`` and
``matrix.at(i, j)`` before building a model, as in laddu.

``solve`` is Gaussian elimination and back substitution unrolled into scalar nodes.  Rows
are swapped only where a pivot is a constant zero (decided once, as the graph is built);
pivoting on per-event values would be a data-dependent branch, so there is none.  That is
backward stable while the leading principal minors stay away from zero, which holds for
the system it is made for: ``I - i K rho`` with a real symmetric ``K`` and ``rho > 0`` has
non-singular leading blocks (``K rho`` has real eigenvalues), and so has the pole-cleared
``D I - i K rho`` off the poles (near them it is ill-conditioned, which is why
:func:`~laddu_dask.f_vector` solves in pole space).  A vanishing pivot on an
event gives a non-finite value, which the likelihood reports as an error naming the event.
Cramer's rule, the branch-free alternative, loses accuracy as the square of the condition
number (``3e-4`` relative within ``1e-6`` GeV^2 of a K-matrix pole's pole-cleared system,
against ``1e-9`` here).

Examples
--------
>>> import laddu_dask as ld
>>> a = ld.matrix([[2.0, 1.0], [1.0, 3.0]])
>>> x = ld.solve(a, ld.vector([3.0, 5.0]))
>>> x.shape, round(x[0].attr, 12), round(x[1].attr, 12)
((2,), 0.8, 1.4)
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from laddu_dask.errors import ModelError
from laddu_dask.expr.expr_views import DisplayViews
from laddu_dask.expr.exprjson import to_json
from laddu_dask.expr.node import Expr, ExprLike, as_expr, constant

#: The largest system :func:`solve` unrolls (its graph grows as ``n^3``).
MAX_SOLVE = 8


def _element(value: object, where: str) -> Expr:
    if isinstance(value, (Matrix, Vector)):
        raise ModelError(f"{where} must be a scalar expression, got a {value!r}")
    try:
        return as_expr(value)  # type: ignore[arg-type]
    except ModelError as exc:
        raise ModelError(f"{where}: {exc}") from None


def expr_sum(terms: Sequence[Expr]) -> Expr:
    """``terms[0] + terms[1] + ...`` (left to right) of a non-empty sequence."""
    out = terms[0]
    for t in terms[1:]:
        out = out + t
    return out


class Vector(DisplayViews):
    """A vector of per-event expressions (laddu's vector-valued ``Expr``); build with :func:`vector`.

    ``v[i]`` is the ``i``-th entry, ``v @ w`` the (unconjugated) dot product and
    ``m @ v`` a matrix-vector product.
    """

    __slots__ = ("elements",)

    def __init__(self, elements: Sequence[ExprLike]) -> None:
        self.elements: tuple[Expr, ...] = tuple(
            _element(e, f"vector element {i}") for i, e in enumerate(elements)
        )

    @property
    def shape(self) -> tuple[int]:
        """``(n,)``."""
        return (len(self.elements),)

    def __len__(self) -> int:
        return len(self.elements)

    def __iter__(self) -> Iterator[Expr]:
        return iter(self.elements)

    def __getitem__(self, index: int) -> Expr:
        if isinstance(index, bool) or not isinstance(index, int):
            raise ModelError(f"a vector index must be an integer, got {index!r}")
        if not -len(self) <= index < len(self):
            raise ModelError(f"index {index} is out of bounds for {self!r}")
        return self.elements[index]

    def __repr__(self) -> str:
        return f"Vector[{len(self)}]"

    def __matmul__(self, other: object) -> Expr:
        if not isinstance(other, Vector):
            return NotImplemented
        return dot(self, other)

    def __mul__(self, other: ExprLike) -> Vector:
        other = _element(other, "a vector's scalar factor")
        return Vector([e * other for e in self.elements])

    def __rmul__(self, other: ExprLike) -> Vector:
        other = _element(other, "a vector's scalar factor")
        return Vector([other * e for e in self.elements])

    def __truediv__(self, other: ExprLike) -> Vector:
        other = _element(other, "a vector's scalar divisor")
        return Vector([e / other for e in self.elements])

    def conj(self) -> Vector:
        """The entry-wise complex conjugate."""
        return Vector([e.conj() for e in self.elements])

    def to_json(self) -> str:
        """laddu 0.28.1's JSON of the vector-valued expression (a ``Vector`` node)."""
        return to_json(self)


class Matrix(DisplayViews):
    """A matrix of per-event expressions (laddu's matrix-valued ``Expr``); build with :func:`matrix`.

    ``m.at(i, j)`` is an entry, ``m @ n`` and ``m @ v`` are products.
    """

    __slots__ = ("rows",)

    def __init__(self, rows: Sequence[Sequence[ExprLike]]) -> None:
        if isinstance(rows, (Matrix, Vector, Expr)) or not len(rows):
            raise ModelError("a matrix needs at least one row and one column")
        width = None
        out = []
        for i, row in enumerate(rows):
            if isinstance(row, Vector):
                row = row.elements
            if isinstance(row, (Expr, Matrix, str)) or not isinstance(row, Sequence):
                raise ModelError(f"matrix row {i} must be a sequence of expressions, got {row!r}")
            if width is None:
                width = len(row)
            if len(row) != width:
                raise ModelError(
                    f"matrix rows must have equal lengths: row 0 has {width}, row {i} has {len(row)}"
                )
            out.append(tuple(_element(e, f"matrix element ({i}, {j})") for j, e in enumerate(row)))
        if not width:
            raise ModelError("a matrix needs at least one row and one column")
        self.rows: tuple[tuple[Expr, ...], ...] = tuple(out)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``."""
        return (len(self.rows), len(self.rows[0]))

    def at(self, row: int, col: int) -> Expr:
        """The entry in row ``row`` and column ``col`` (zero-based)."""
        n, m = self.shape
        for i in (row, col):
            if isinstance(i, bool) or not isinstance(i, int):
                raise ModelError(f"matrix indices must be integers, got ({row!r}, {col!r})")
        if not (0 <= row < n and 0 <= col < m):
            raise ModelError(f"index ({row}, {col}) is out of bounds for {self!r}")
        return self.rows[row][col]

    def __getitem__(self, index: object) -> Expr:
        if isinstance(index, tuple) and len(index) == 2:
            return self.at(*index)
        raise ModelError(f"select an entry of a {self!r} with .at(row, col)")

    def __repr__(self) -> str:
        n, m = self.shape
        return f"Matrix[{n}x{m}]"

    def __matmul__(self, other: object) -> Matrix | Vector:
        if isinstance(other, Vector):
            return matvec(self, other)
        if isinstance(other, Matrix):
            return matmul(self, other)
        return NotImplemented

    def __mul__(self, other: ExprLike) -> Matrix:
        other = _element(other, "a matrix's scalar factor")
        return Matrix([[e * other for e in row] for row in self.rows])

    def __rmul__(self, other: ExprLike) -> Matrix:
        other = _element(other, "a matrix's scalar factor")
        return Matrix([[other * e for e in row] for row in self.rows])

    def __truediv__(self, other: ExprLike) -> Matrix:
        other = _element(other, "a matrix's scalar divisor")
        return Matrix([[e / other for e in row] for row in self.rows])

    def conj(self) -> Matrix:
        """The entry-wise complex conjugate."""
        return Matrix([[e.conj() for e in row] for row in self.rows])

    def to_json(self) -> str:
        """laddu 0.28.1's JSON of the matrix-valued expression (a ``Matrix`` node)."""
        return to_json(self)

    def column(self, col: int) -> Vector:
        """Column ``col`` as a :class:`Vector`."""
        return Vector([self.at(i, col) for i in range(self.shape[0])])


Operand = Matrix | Vector


def vector(elements: Sequence[ExprLike]) -> Vector:
    """A vector of scalar expressions (laddu's ``vector``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> v = ld.vector([1.0, ld.scalar("x")])
    >>> v.shape, v[1]
    ((2,), Expr(column 'x'))
    """
    if isinstance(elements, (Expr, Matrix, str)):
        raise ModelError(f"vector needs a sequence of expressions, got {elements!r}")
    return elements if isinstance(elements, Vector) else Vector(elements)


def matrix(elements: Sequence[Sequence[ExprLike]]) -> Matrix:
    """A matrix of scalar expressions from its rows (laddu's ``matrix``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.matrix([[1.0, 2.0], [3.0, ld.scalar("x")]]).shape
    (2, 2)
    """
    return elements if isinstance(elements, Matrix) else Matrix(elements)


def _need(value: object, kind: type, what: str, role: str) -> None:
    if not isinstance(value, kind):
        raise ModelError(f"{what}: {role} must be a {kind.__name__}, got {value!r}")


def dot(lhs: Vector, rhs: Vector) -> Expr:
    """The dot product ``sum_i lhs[i] rhs[i]`` of two vectors of equal length (no conjugation,
    as laddu's ``dot``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.dot(ld.vector([1j, 2.0]), ld.vector([1j, 2.0]))
    Expr(const (3+0j))
    """
    _need(lhs, Vector, "dot", "the left operand")
    _need(rhs, Vector, "dot", "the right operand")
    if len(lhs) != len(rhs):
        raise ModelError(f"dot: vector lengths differ: {len(lhs)} and {len(rhs)}")
    return expr_sum([a * b for a, b in zip(lhs.elements, rhs.elements, strict=True)])


def matvec(lhs: Matrix, rhs: Vector) -> Vector:
    """The matrix-vector product ``lhs @ rhs`` (laddu's ``matvec``).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> [e.attr for e in ld.matvec(ld.matrix([[1.0, 2.0], [3.0, 4.0]]), ld.vector([1.0, 1.0]))]
    [3.0, 7.0]
    """
    _need(lhs, Matrix, "matvec", "the left operand")
    _need(rhs, Vector, "matvec", "the right operand")
    if lhs.shape[1] != len(rhs):
        raise ModelError(f"matvec: cannot multiply {lhs!r} by {rhs!r}")
    return Vector([dot(Vector(row), rhs) for row in lhs.rows])


def matmul(lhs: Matrix, rhs: Matrix) -> Matrix:
    """The matrix product ``lhs @ rhs`` (laddu's ``matmul``; ``matvec`` multiplies a vector).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> ld.matmul(ld.matrix([[1.0, 2.0]]), ld.matrix([[1.0], [1.0]])).at(0, 0)
    Expr(const 3.0)
    """
    _need(lhs, Matrix, "matmul", "the left operand")
    _need(rhs, Matrix, "matmul", "the right operand (use matvec for a vector)")
    if lhs.shape[1] != rhs.shape[0]:
        raise ModelError(f"matmul: cannot multiply {lhs!r} by {rhs!r}")
    cols = [rhs.column(j) for j in range(rhs.shape[1])]
    return Matrix([[dot(Vector(row), c) for c in cols] for row in lhs.rows])


def solve(lhs: Matrix, rhs: Operand) -> Operand:
    """The solution ``x`` of ``lhs @ x = rhs`` per event (laddu's ``solve``): a vector for a
    vector ``rhs``, a matrix for a matrix ``rhs``.

    Gaussian elimination unrolled into scalar operations (rows swapped only around constant
    zero pivots, so no data-dependent branch; exact derivatives through the compiled reverse
    sweep); square systems up to ``8 x 8``.  See the module notes on conditioning.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> x = ld.solve(ld.matrix([[0.0, 1.0], [1.0, 0.0]]), ld.vector([2.0, 3.0]))
    >>> x[0].attr, x[1].attr
    (3.0, 2.0)
    """
    _need(lhs, Matrix, "solve", "the coefficient matrix")
    n, m = lhs.shape
    if n != m:
        raise ModelError(f"solve: the coefficient matrix must be square, got {lhs!r}")
    if n > MAX_SOLVE:
        raise ModelError(f"solve unrolls systems up to {MAX_SOLVE}x{MAX_SOLVE}, got {lhs!r}")
    if isinstance(rhs, Matrix):
        if rhs.shape[0] != n:
            raise ModelError(f"solve: cannot solve {lhs!r} against {rhs!r}")
        cols = _solve_columns(lhs, [rhs.column(j) for j in range(rhs.shape[1])])
        return Matrix([[c[i] for c in cols] for i in range(n)])
    _need(rhs, Vector, "solve", "the right-hand side")
    if len(rhs) != n:
        raise ModelError(f"solve: cannot solve {lhs!r} against {rhs!r}")
    return Vector(_solve_columns(lhs, [rhs])[0])


def _is_zero(e: Expr) -> bool:
    return e.is_const and e.attr == 0


def _solve_columns(a: Matrix, rhs: list[Vector]) -> list[list[Expr]]:
    """Gaussian elimination without pivoting and back substitution, unrolled; constant zero
    entries are skipped (structural sparsity costs nothing)."""
    n = a.shape[0]
    m = [list(row) for row in a.rows]
    cols = [list(b.elements) for b in rhs]
    for k in range(n):
        if _is_zero(m[k][k]):  # a structural zero pivot: swap rows, decided as the graph is built
            swap = next((i for i in range(k + 1, n) if not _is_zero(m[i][k])), None)
            if swap is None:
                raise ModelError(f"solve: the coefficient matrix is singular (column {k} is zero)")
            m[k], m[swap] = m[swap], m[k]
            for b in cols:
                b[k], b[swap] = b[swap], b[k]
        for i in range(k + 1, n):
            if _is_zero(m[i][k]):
                continue
            f = m[i][k] / m[k][k]
            for j in range(k + 1, n):
                if not _is_zero(m[k][j]):
                    m[i][j] = m[i][j] - f * m[k][j]
            for b in cols:
                if not _is_zero(b[k]):
                    b[i] = b[i] - f * b[k]
    out = []
    for b in cols:
        x: list[Expr] = [constant(0.0)] * n
        for i in reversed(range(n)):
            terms = [b[i]] + [-(m[i][j] * x[j]) for j in range(i + 1, n) if not _is_zero(m[i][j])]
            x[i] = expr_sum(terms) / m[i][i]
        out.append(x)
    return out
