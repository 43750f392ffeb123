"""The coupled-channel K-matrix with P-vector production (laddu's ``k_matrix``, ``p_vector``,
``f_vector``; the barrier matrix is
:func:`laddu_dask.expr.lineshapes.blatt_weisskopf_barriers`), built from :mod:`laddu_dask.expr.linalg`.

laddu's conventions: with ``D_a = m_a^2 - s`` for the poles ``a`` and ``D = prod_a D_a``,
:func:`k_matrix` and :func:`p_vector` return the pole-cleared forms

    ``K_ij = sum_a B_ia B_ja g_ia g_ja prod_{b != a} D_b + c_ij D``,
    ``P_i = sum_a beta_a B_ia g_ia prod_{b != a} D_b + p_i D``

(``D`` times the usual ``sum_a g g / (m_a^2 - s) + c``), so nothing is divided by a pole
denominator, and :func:`f_vector` solves ``(D I + K C) F = P`` for ``F``; that is
``F = (I + K' C)^{-1} P'`` with the uncleared ``K'`` and ``P'``.  The phase-space matrix ``C``
is the caller's (``-i diag(rho)`` gives ``(I - i K' rho)^{-1} P'``; a Chew-Mandelstam matrix
goes in the same place).

Examples
--------
>>> import laddu_dask as ld
>>> s = ld.scalar("s")
>>> k = ld.k_matrix(s, pole_masses=ld.vector([1.0]), couplings=ld.matrix([[0.5]]),
...                 barriers=ld.matrix([[1.0]]))
>>> k.shape
(1, 1)
"""

from __future__ import annotations

from laddu_dask.errors import ModelError
from laddu_dask.expr.linalg import Matrix, Vector, expr_sum, matmul, matrix, solve, vector
from laddu_dask.expr.node import Expr, ExprLike, as_expr, constant


def _scalar(value: object, what: str) -> Expr:
    if isinstance(value, (Matrix, Vector)):
        raise ModelError(f"{what} must be a scalar expression, got {value!r}")
    return as_expr(value)  # type: ignore[arg-type]


def _vector(value: object, what: str, length: int | None = None) -> Vector:
    if not isinstance(value, Vector):
        raise ModelError(f"{what} must be a vector, got {value!r}")
    if length is not None and len(value) != length:
        raise ModelError(f"{what} must be Vector[{length}], got {value!r}")
    return value


def _matrix(value: object, what: str, shape: tuple[int, int] | None = None) -> Matrix:
    if not isinstance(value, Matrix):
        raise ModelError(f"{what} must be a matrix, got {value!r}")
    if shape is not None and value.shape != shape:
        raise ModelError(f"{what} must be Matrix[{shape[0]}x{shape[1]}], got {value!r}")
    return value


def _product(terms: list[Expr]) -> Expr:
    out: Expr = constant(1.0)
    for t in terms:
        out = out * t
    return out


def _pole_inputs(s: ExprLike, pole_masses: object, couplings: object, barriers: object):
    """The validated inputs, ``(s, channels, poles, D, [prod_{b != a} D_b for a])``."""
    s = _scalar(s, "s")
    masses = _vector(pole_masses, "pole_masses")
    couplings = _matrix(couplings, "couplings")
    channels, poles = couplings.shape
    if poles != len(masses):
        raise ModelError(
            f"couplings has {poles} pole columns but pole_masses has length {len(masses)}"
        )
    _matrix(barriers, "barriers", (channels, poles))
    denominators = [m * m - s for m in masses]
    reduced = [_product(denominators[:a] + denominators[a + 1 :]) for a in range(poles)]
    return s, channels, poles, _product(denominators), reduced


def k_matrix(
    s: ExprLike,
    *,
    pole_masses: Vector,
    couplings: Matrix,
    barriers: Matrix,
    background: Matrix | None = None,
) -> Matrix:
    """The pole-cleared channel-by-channel K-matrix (laddu's ``k_matrix``).

    ``K_ij = sum_a B_ia B_ja g_ia g_ja prod_{b != a} (m_b^2 - s) + c_ij prod_b (m_b^2 - s)``.

    Parameters
    ----------
    s : Expr or float
        Squared invariant mass.
    pole_masses : Vector
        The pole masses ``m_a`` (length ``poles``).
    couplings, barriers : Matrix
        ``channels x poles`` couplings ``g_ia`` and barrier factors ``B_ia``.
    background : Matrix, optional
        ``channels x channels`` non-pole background ``c_ij``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> k = ld.k_matrix(0.5, pole_masses=ld.vector([1.0]), couplings=ld.matrix([[2.0]]),
    ...                 barriers=ld.matrix([[1.0]]), background=ld.matrix([[1.0]]))
    >>> k.at(0, 0).attr  # 4 + 1 * (1 - 0.5)
    4.5
    """
    _, channels, poles, pole_product, reduced = _pole_inputs(s, pole_masses, couplings, barriers)
    if background is not None:
        _matrix(background, "the K background", (channels, channels))
    rows = []
    for i in range(channels):
        row = []
        for j in range(channels):
            terms = [
                barriers.at(i, a) * barriers.at(j, a) * couplings.at(i, a) * couplings.at(j, a) * reduced[a]
                for a in range(poles)
            ]
            if background is not None:
                terms.append(background.at(i, j) * pole_product)
            row.append(expr_sum(terms))
        rows.append(row)
    return matrix(rows)


def p_vector(
    s: ExprLike,
    *,
    pole_masses: Vector,
    production: Vector,
    couplings: Matrix,
    barriers: Matrix,
    background: Vector | None = None,
) -> Vector:
    """The pole-cleared channel production vector (laddu's ``p_vector``).

    ``P_i = sum_a beta_a B_ia g_ia prod_{b != a} (m_b^2 - s) + p_i prod_b (m_b^2 - s)``.

    Parameters
    ----------
    s : Expr or float
        Squared invariant mass.
    pole_masses : Vector
        The pole masses (length ``poles``).
    production : Vector
        Complex production strengths ``beta_a`` of the poles.
    couplings, barriers : Matrix
        ``channels x poles`` couplings and barrier factors.
    background : Vector, optional
        Non-pole production ``p_i`` per channel.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> p = ld.p_vector(0.5, pole_masses=ld.vector([1.0]), production=ld.vector([2.0]),
    ...                 couplings=ld.matrix([[3.0]]), barriers=ld.matrix([[1.0]]))
    >>> p[0].attr
    6.0
    """
    _, channels, poles, pole_product, reduced = _pole_inputs(s, pole_masses, couplings, barriers)
    _vector(production, "production", poles)
    if background is not None:
        _vector(background, "the P background", channels)
    out = []
    for i in range(channels):
        terms = [production[a] * barriers.at(i, a) * couplings.at(i, a) * reduced[a] for a in range(poles)]
        if background is not None:
            terms.append(background[i] * pole_product)
        out.append(expr_sum(terms))
    return vector(out)


def f_vector(s: ExprLike, *, pole_masses: Vector, k: Matrix, p: Vector, phase_space: Matrix) -> Vector:
    """The unitarized channel amplitudes ``F`` of ``(D I + K C) F = P`` (laddu's ``f_vector``),
    ``D = prod_a (m_a^2 - s)``, for the pole-cleared ``K`` and ``P`` of :func:`k_matrix` and
    :func:`p_vector` and the phase-space matrix ``C`` (``-i diag(rho)`` for the usual
    ``(I - i K rho)^{-1} P``).  The solve is :func:`~laddu_dask.solve`.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> masses = ld.vector([1.0])
    >>> k = ld.k_matrix(0.5, pole_masses=masses, couplings=ld.matrix([[1.0]]), barriers=ld.matrix([[1.0]]))
    >>> p = ld.p_vector(0.5, pole_masses=masses, production=ld.vector([1.0]),
    ...                 couplings=ld.matrix([[1.0]]), barriers=ld.matrix([[1.0]]))
    >>> f = ld.f_vector(0.5, pole_masses=masses, k=k, p=p, phase_space=ld.matrix([[-0.5j]]))
    >>> complex(f[0].attr)  # 1 / (0.5 - 0.5 i)
    (1+1j)
    """
    s = _scalar(s, "s")
    masses = _vector(pole_masses, "pole_masses")
    p = _vector(p, "P")
    channels = len(p)
    k = _matrix(k, "K", (channels, channels))
    phase_space = _matrix(phase_space, "phase_space", (channels, channels))
    if not len(masses):
        raise ModelError("F vectors require at least one pole")
    pole_product = _product([m * m - s for m in masses])
    kc = matmul(k, phase_space)
    system = [
        [kc.at(i, j) + pole_product if i == j else kc.at(i, j) for j in range(channels)]
        for i in range(channels)
    ]
    return solve(matrix(system), p)

