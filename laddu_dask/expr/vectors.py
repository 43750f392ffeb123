"""Three- and four-vectors of expressions.

A :class:`Vec4` holds four real expressions ``(e, px, py, pz)``; its methods build
the usual kinematic quantities as expressions, so vector algebra costs nothing at
evaluation time beyond the scalar operations it expands to (and shared pieces are
computed once).  Event four-vectors follow laddu's column convention:
``Vec4.event("beam")`` reads ``beam_e, beam_px, beam_py, beam_pz``.

Examples
--------
>>> import laddu_dask as ld
>>> k1, k2 = ld.Vec4.event("kshort1"), ld.Vec4.event("kshort2")
>>> x = k1 + k2
>>> k = k1.boost(-x.beta())
>>> k.vec3().costheta().kind
'real'
"""

from __future__ import annotations

from collections.abc import Iterator

from laddu_dask.errors import ModelError
from laddu_dask.expr.node import Expr, ExprLike, as_expr, atan2, column

P4_COMPONENTS = ("e", "px", "py", "pz")


def _real(value: ExprLike, what: str) -> Expr:
    out = as_expr(value)
    if out.kind != "real":
        raise ModelError(f"{what} must be real, got a complex expression")
    return out


class Vec3:
    """A three-vector of real expressions.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> v = ld.Vec3(1.0, 2.0, 2.0)
    >>> v.mag()
    Expr(const 3.0)
    """

    __slots__ = ("x", "y", "z")

    def __init__(self, x: ExprLike, y: ExprLike, z: ExprLike) -> None:
        self.x = _real(x, "Vec3.x")
        self.y = _real(y, "Vec3.y")
        self.z = _real(z, "Vec3.z")

    def __iter__(self) -> Iterator[Expr]:
        return iter((self.x, self.y, self.z))

    def __repr__(self) -> str:
        return f"Vec3({self.x!r}, {self.y!r}, {self.z!r})"

    def __add__(self, other: Vec3) -> Vec3:
        return Vec3(self.x + other.x, self.y + other.y, self.z + other.z)

    def __sub__(self, other: Vec3) -> Vec3:
        return Vec3(self.x - other.x, self.y - other.y, self.z - other.z)

    def __neg__(self) -> Vec3:
        return Vec3(-self.x, -self.y, -self.z)

    def __mul__(self, k: ExprLike) -> Vec3:
        k = _real(k, "a Vec3 scale factor")
        return Vec3(self.x * k, self.y * k, self.z * k)

    __rmul__ = __mul__

    def __truediv__(self, k: ExprLike) -> Vec3:
        k = _real(k, "a Vec3 divisor")
        return Vec3(self.x / k, self.y / k, self.z / k)

    def dot(self, other: Vec3) -> Expr:
        """Scalar product."""
        return self.x * other.x + self.y * other.y + self.z * other.z

    def cross(self, other: Vec3) -> Vec3:
        """Vector product ``self x other``."""
        return Vec3(
            self.y * other.z - self.z * other.y,
            self.z * other.x - self.x * other.z,
            self.x * other.y - self.y * other.x,
        )

    def mag2(self) -> Expr:
        """Squared magnitude."""
        return self.dot(self)

    def mag(self) -> Expr:
        """Magnitude."""
        return self.mag2().sqrt()

    def unit(self) -> Vec3:
        """The unit vector along ``self``."""
        return self / self.mag()

    def costheta(self) -> Expr:
        """Cosine of the polar angle, ``z / |v|``."""
        return self.z / self.mag()

    def phi(self) -> Expr:
        """Azimuthal angle, ``atan2(y, x)``."""
        return atan2(self.y, self.x)

    def to_p4(self, mass: ExprLike) -> Vec4:
        """The four-vector with this momentum and the given mass."""
        m = _real(mass, "mass")
        return Vec4((self.mag2() + m * m).sqrt(), self.x, self.y, self.z)


class Vec4:
    """A four-vector ``(e, px, py, pz)`` of real expressions (metric +,-,-,-).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> p = ld.Vec4(5.0, 0.0, 0.0, 3.0)
    >>> p.m()
    Expr(const 4.0)
    """

    __slots__ = ("e", "px", "py", "pz")

    def __init__(self, e: ExprLike, px: ExprLike, py: ExprLike, pz: ExprLike) -> None:
        self.e = _real(e, "Vec4.e")
        self.px = _real(px, "Vec4.px")
        self.py = _real(py, "Vec4.py")
        self.pz = _real(pz, "Vec4.pz")

    @classmethod
    def event(cls, name: str) -> Vec4:
        """The four-vector stored in columns ``NAME_e, NAME_px, NAME_py, NAME_pz``."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"a four-vector name must be a non-empty string, got {name!r}")
        return cls(*(column(f"{name}_{c}") for c in P4_COMPONENTS))

    def __iter__(self) -> Iterator[Expr]:
        return iter((self.e, self.px, self.py, self.pz))

    def __repr__(self) -> str:
        return f"Vec4({self.e!r}, {self.px!r}, {self.py!r}, {self.pz!r})"

    def __add__(self, other: Vec4) -> Vec4:
        return Vec4(*(a + b for a, b in zip(self, other)))

    def __sub__(self, other: Vec4) -> Vec4:
        return Vec4(*(a - b for a, b in zip(self, other)))

    def __neg__(self) -> Vec4:
        return Vec4(*(-a for a in self))

    def vec3(self) -> Vec3:
        """The momentum three-vector."""
        return Vec3(self.px, self.py, self.pz)

    def m2(self) -> Expr:
        """Invariant mass squared ``e^2 - |p|^2``."""
        return self.e * self.e - self.vec3().mag2()

    def m(self) -> Expr:
        """Invariant mass."""
        return self.m2().sqrt()

    def beta(self) -> Vec3:
        """Velocity ``p / e``."""
        return self.vec3() / self.e

    def gamma(self) -> Expr:
        """Lorentz factor ``e / m``."""
        return self.e / self.m()

    def dot(self, other: Vec4) -> Expr:
        """Minkowski product."""
        return self.e * other.e - self.vec3().dot(other.vec3())

    def boost(self, beta: Vec3) -> Vec4:
        """This four-vector seen from a frame moving with velocity ``-beta``.

        ``p.boost(-x.beta())`` takes ``p`` into the rest frame of ``x``.
        The form ``(gamma - 1) / beta^2 = gamma^2 / (gamma + 1)`` stays finite at rest.
        """
        b2 = beta.mag2()
        gamma = 1.0 / (1.0 - b2).sqrt()
        bp = beta.dot(self.vec3())
        coef = gamma * gamma / (gamma + 1.0) * bp + gamma * self.e
        p = self.vec3() + beta * coef
        return Vec4(gamma * (self.e + bp), p.x, p.y, p.z)
