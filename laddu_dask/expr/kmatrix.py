"""The coupled-channel K-matrix with P-vector production (laddu's ``k_matrix``, ``p_vector``,
``f_vector``; the barrier matrix is
:func:`laddu_dask.expr.lineshapes.blatt_weisskopf_barriers`), built from :mod:`laddu_dask.expr.linalg`.

laddu's conventions: with ``D_a = m_a^2 - s`` for the poles ``a`` and ``D = prod_a D_a``,
:func:`k_matrix` and :func:`p_vector` return the pole-cleared forms

    ``K_ij = sum_a B_ia B_ja g_ia g_ja prod_{b != a} D_b + c_ij D``,
    ``P_i = sum_a beta_a B_ia g_ia prod_{b != a} D_b + p_i D``

(``D`` times the usual ``sum_a g g / (m_a^2 - s) + c``), so nothing is divided by a pole
denominator, and :func:`f_vector` gives the ``F`` of ``(D I + K C) F = P``; that is
``F = (I + K' C)^{-1} P'`` with the uncleared ``K'`` and ``P'``.  The phase-space matrix ``C``
is the caller's (``-i diag(rho)`` gives ``(I - i K' rho)^{-1} P'``; a Chew-Mandelstam matrix
goes in the same place).

How ``F`` is solved.  The pole-cleared matrix ``D I + K C`` is singular at every pole
(``D_a = 0`` leaves only pole ``a``'s rank-one ``g_a g_a^T C``), so solving it loses
``1 / |D_a|`` in accuracy near a pole although ``F`` is smooth there (laddu 0.28.1 solves it:
its intensity is off by about ``5e-17 GeV^2 / |D_a|`` relative, a pole mass's derivative by
``2e-16 GeV^4 / D_a^2``, 1e3 times its size at ``1e-10`` GeV^2 from a pole).  When ``K`` and
``P`` are :func:`k_matrix`'s and :func:`p_vector`'s with the same ``s``, pole masses,
couplings and barriers (the usual case), :func:`f_vector` solves the same equations in pole
space instead.  With ``G_ia = B_ia g_ia``, ``K' = G Delta^{-1} G^T + c``,
``P' = G Delta^{-1} beta + p``, ``Delta = diag(D_a)`` and ``A = I + c C``, Woodbury's identity
gives

    ``F = A^{-1} p + A^{-1} G E^{-1} (beta - G^T M p)``,  ``E = Delta + G^T M G``,  ``M = C A^{-1}``,

which divides by no ``D_a``: the poles-by-poles ``E`` stays regular through the poles, so the
value and every derivative keep full accuracy there (1e-13 of a 50-digit evaluation per event,
to ``1e-10`` GeV^2 from a pole).  ``A`` and ``M`` hold no coupling: with a constant background
they are event-only, computed once per event.  Above the thresholds ``A`` and ``E`` are
non-singular for a real symmetric ``c``; below one, ``A`` is singular where the background
alone binds (``det(I + c C) = 0``), an isolated ``s`` where the pivot vanishes and the value
is non-finite (reported by a likelihood).  Any other ``K`` and ``P`` are solved as
``(D I + K C) F = P``.

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
from laddu_dask.expr.linalg import Matrix, Vector, expr_sum, matmul, matrix, matvec, solve, vector
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


class KMatrix(Matrix):
    """The matrix :func:`k_matrix` returns: a :class:`Matrix` that also keeps its pole
    terms (``s``, the pole masses, ``G_ia = B_ia g_ia``, the background) for :func:`f_vector`."""

    __slots__ = ("poles",)

    def __init__(self, rows, poles: tuple) -> None:
        super().__init__(rows)
        self.poles = poles


class PVector(Vector):
    """The vector :func:`p_vector` returns: a :class:`Vector` that also keeps its pole terms
    (``s``, the pole masses, ``G_ia``, the production strengths, the background)."""

    __slots__ = ("poles",)

    def __init__(self, elements, poles: tuple) -> None:
        super().__init__(elements)
        self.poles = poles


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


def _same(a: tuple, b: tuple) -> bool:
    """Whether two nested tuples hold the same interned nodes (identity, no predicates)."""
    if isinstance(a, Expr) or isinstance(b, Expr):
        return a is b
    return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))


def _pole_key(s: Expr, masses: Vector, couplings: Matrix, barriers: Matrix) -> tuple:
    """``(s, pole masses, G)`` as interned nodes, ``G_ia = B_ia g_ia``: equal keys mean the
    same poles (nodes are interned, so identity is equality)."""
    channels, poles = couplings.shape
    g = tuple(tuple(barriers.at(i, a) * couplings.at(i, a) for a in range(poles)) for i in range(channels))
    return (s, tuple(masses), g)


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
    s, channels, poles, pole_product, reduced = _pole_inputs(s, pole_masses, couplings, barriers)
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
    return KMatrix(rows, (_pole_key(s, pole_masses, couplings, barriers), background))


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
    s, channels, poles, pole_product, reduced = _pole_inputs(s, pole_masses, couplings, barriers)
    _vector(production, "production", poles)
    if background is not None:
        _vector(background, "the P background", channels)
    out = []
    for i in range(channels):
        terms = [production[a] * barriers.at(i, a) * couplings.at(i, a) * reduced[a] for a in range(poles)]
        if background is not None:
            terms.append(background[i] * pole_product)
        out.append(expr_sum(terms))
    return PVector(out, (_pole_key(s, pole_masses, couplings, barriers), production, background))


def f_vector(s: ExprLike, *, pole_masses: Vector, k: Matrix, p: Vector, phase_space: Matrix) -> Vector:
    """The unitarized channel amplitudes ``F`` of ``(D I + K C) F = P`` (laddu's ``f_vector``),
    ``D = prod_a (m_a^2 - s)``, for the pole-cleared ``K`` and ``P`` of :func:`k_matrix` and
    :func:`p_vector` and the phase-space matrix ``C`` (``-i diag(rho)`` for the usual
    ``(I - i K rho)^{-1} P``).  For ``K`` and ``P`` of one set of poles (the same ``s``, pole
    masses, couplings and barriers) the equations are solved in pole space, exact through
    the poles; any other ``K`` and ``P`` by :func:`~laddu_dask.solve` (the module notes).

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
    if isinstance(k, KMatrix) and isinstance(p, PVector):
        (key, k_background), (p_key, production, p_background) = k.poles, p.poles
        if _same(key, p_key) and _same(key[:2], (s, tuple(masses))):
            return _pole_space_f(key, k_background, production, p_background, phase_space)
    pole_product = _product([m * m - s for m in masses])
    kc = matmul(k, phase_space)
    system = [
        [kc.at(i, j) + pole_product if i == j else kc.at(i, j) for j in range(channels)]
        for i in range(channels)
    ]
    return solve(matrix(system), p)


def _pole_space_f(key: tuple, c: Matrix | None, beta: Vector, p: Vector | None, phase: Matrix) -> Vector:
    """``F = A^{-1} p + A^{-1} G E^{-1} (beta - G^T M p)``, ``E = Delta + G^T M G``,
    ``M = C A^{-1}``, ``A = I + c C`` (the module notes): no division by a pole's ``D_a``."""
    s, masses, g_rows = key
    channels, poles = len(g_rows), len(masses)
    g = matrix(g_rows)
    if c is None:  # A = I
        a_inv, m, u = None, phase, g
    else:
        cc = matmul(c, phase)
        a = matrix([[cc.at(i, j) + 1.0 if i == j else cc.at(i, j) for j in range(channels)]
                    for i in range(channels)])
        a_inv = solve(a, matrix([[1.0 if i == j else 0.0 for j in range(channels)] for i in range(channels)]))
        m, u = matmul(phase, a_inv), matmul(a_inv, g)
    gt = matrix([[g_rows[i][a] for i in range(channels)] for a in range(poles)])
    gtmg = matmul(gt, matmul(m, g))
    e = matrix([[gtmg.at(a, b) + (masses[a] * masses[a] - s) if a == b else gtmg.at(a, b)
                 for b in range(poles)] for a in range(poles)])
    if p is None:
        return matvec(u, solve(e, beta))
    w = p if a_inv is None else matvec(a_inv, p)
    gtmp = matvec(gt, matvec(m, p))
    uz = matvec(u, solve(e, vector([beta[a] - gtmp[a] for a in range(poles)])))
    return vector([w[i] + uz[i] for i in range(channels)])
