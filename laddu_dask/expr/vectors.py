"""Three- and four-vectors of expressions.

A :class:`Vec4` holds four real expressions ``(e, px, py, pz)``; its methods build
the usual kinematic quantities as expressions, so vector algebra costs nothing at
evaluation time beyond the scalar operations it expands to (and shared pieces are
computed once).  Event four-vectors follow laddu's column convention:
``Vec4.event("beam")`` reads ``beam_e, beam_px, beam_py, beam_pz``.  Components are
methods, as in laddu (``p.e()``, ``p.px()``, ``v.pz()``); ``Vec3.x()``, ``y()``, ``z()``
are laddu's aliases of the unit axes ``x_axis()``, ``y_axis()``, ``z_axis()``.

Examples
--------
>>> import laddu_dask as ld
>>> k1, k2 = ld.Vec4.event("kshort1"), ld.Vec4.event("kshort2")
>>> x = k1 + k2
>>> k = k1.boost(-x.beta())
>>> k.momentum().costheta().kind, x.mass().kind
('real', 'complex')
"""

from __future__ import annotations

import json
from collections.abc import Iterator

from laddu_dask.errors import ModelError
from laddu_dask.expr.exprjson import parse_json, to_dict
from laddu_dask.expr.exprjson_read import from_dict
from laddu_dask.expr.functions import atan2
from laddu_dask.expr.linalg import Vector
from laddu_dask.expr.node import Expr, ExprLike, apply, as_expr, column

P4_COMPONENTS = ("e", "px", "py", "pz")


def _real(value: ExprLike, what: str) -> Expr:
    out = as_expr(value)
    if out.kind != "real":
        raise ModelError(f"{what} must be real, got a complex expression")
    return out


class Vec3:
    """A three-vector of real expressions (laddu's ``Vec3``).

    Parameters
    ----------
    x, y, z : Expr or float
        Cartesian components (real).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> v = ld.Vec3(1.0, 2.0, 2.0)
    >>> v.mag(), v.pz()
    (Expr(const 3.0), Expr(const 2.0))
    >>> (v @ ld.Vec3.z_axis()).attr
    2.0
    """

    __slots__ = ("_x", "_y", "_z")

    def __init__(self, x: ExprLike, y: ExprLike, z: ExprLike) -> None:
        self._x = _real(x, "Vec3.x")
        self._y = _real(y, "Vec3.y")
        self._z = _real(z, "Vec3.z")

    @staticmethod
    def event(prefix: str) -> Vec3:
        """The momentum of the event four-vector ``prefix`` (columns ``prefix_px``, ...)."""
        return Vec4.event(prefix).momentum()

    @staticmethod
    def x_axis() -> Vec3:
        """The unit vector along +x."""
        return Vec3(1.0, 0.0, 0.0)

    @staticmethod
    def y_axis() -> Vec3:
        """The unit vector along +y."""
        return Vec3(0.0, 1.0, 0.0)

    @staticmethod
    def z_axis() -> Vec3:
        """The unit vector along +z."""
        return Vec3(0.0, 0.0, 1.0)

    @staticmethod
    def zero() -> Vec3:
        """The zero vector."""
        return Vec3(0.0, 0.0, 0.0)

    x = x_axis  # laddu's aliases
    y = y_axis
    z = z_axis

    def px(self) -> Expr:
        """The x component."""
        return self._x

    def py(self) -> Expr:
        """The y component."""
        return self._y

    def pz(self) -> Expr:
        """The z component."""
        return self._z

    def __iter__(self) -> Iterator[Expr]:
        return iter((self._x, self._y, self._z))

    def __repr__(self) -> str:
        return f"Vec3({self._x!r}, {self._y!r}, {self._z!r})"

    def as_expr(self) -> Vector:
        """The components as a vector-valued expression (laddu's ``as_expr``): a
        :class:`~laddu_dask.expr.linalg.Vector` ``[x, y, z]``, so ``v.as_expr()[0]`` is ``x``."""
        return Vector(list(self))

    def to_json(self) -> str:
        """laddu's JSON of the vector: ``{"x": <expr>, "y": <expr>, "z": <expr>}``."""
        return _vector_json(self, ("x", "y", "z"))

    @staticmethod
    def from_json(json: str) -> Vec3:
        """The vector of laddu's JSON text (:meth:`to_json`).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> v = ld.Vec3(1.0, ld.scalar("y"), 2.0)
        >>> ld.Vec3.from_json(json=v.to_json()).py()
        Expr(column 'y')
        """
        return Vec3(*_vector_parts(json, ("x", "y", "z"), "Vec3.from_json"))

    def __add__(self, other: Vec3) -> Vec3:
        return Vec3(*(a + b for a, b in zip(self, _vec3(other))))

    def __sub__(self, other: Vec3) -> Vec3:
        return Vec3(*(a - b for a, b in zip(self, _vec3(other))))

    def __neg__(self) -> Vec3:
        return Vec3(-self._x, -self._y, -self._z)

    def __mul__(self, k: ExprLike) -> Vec3:
        k = _real(k, "a Vec3 scale factor")
        return Vec3(self._x * k, self._y * k, self._z * k)

    __rmul__ = __mul__

    def __truediv__(self, k: ExprLike) -> Vec3:
        k = _real(k, "a Vec3 divisor")
        return Vec3(self._x / k, self._y / k, self._z / k)

    def __matmul__(self, other: Vec3) -> Expr:
        return self.dot(other)

    def dot(self, other: Vec3) -> Expr:
        """Scalar (Euclidean) product; also ``self @ other``."""
        other = _vec3(other)
        return self._x * other._x + self._y * other._y + self._z * other._z

    def cross(self, other: Vec3) -> Vec3:
        """Vector product ``self x other``."""
        o = _vec3(other)
        return Vec3(
            self._y * o._z - self._z * o._y,
            self._z * o._x - self._x * o._z,
            self._x * o._y - self._y * o._x,
        )

    def mag2(self) -> Expr:
        """Squared magnitude."""
        return self.dot(self)

    def mag(self) -> Expr:
        """Magnitude (a real expression)."""
        return self.mag2().sqrt()

    def unit(self) -> Vec3:
        """The unit vector along ``self``."""
        return self / self.mag()

    def costheta(self) -> Expr:
        """Cosine of the polar angle, ``z / |v|``."""
        return self._z / self.mag()

    def phi(self) -> Expr:
        """Azimuthal angle, ``atan2(y, x)``."""
        return atan2(self._y, self._x)

    def with_mass(self, mass: ExprLike) -> Vec4:
        """The four-vector with this momentum and invariant mass, ``E = sqrt(|p|^2 + m^2)``.

        A complex ``mass`` (``Vec4.m()``) enters through the real part of ``m^2``.
        """
        m = as_expr(mass)
        m2 = m * m if m.kind == "real" else (m * m).real()
        return Vec4(apply("sqrt", self.mag2() + m2), self._x, self._y, self._z)

    to_p4 = with_mass

    def with_energy(self, energy: ExprLike) -> Vec4:
        """The four-vector with this momentum and the given (real) energy."""
        return Vec4(_real(energy, "energy"), self._x, self._y, self._z)


def _vector_json(vec: Vec3 | Vec4, keys: tuple[str, ...]) -> str:
    return json.dumps({k: to_dict(e) for k, e in zip(keys, vec, strict=True)}, separators=(",", ":"))


def _vector_parts(text: str, keys: tuple[str, ...], where: str) -> list[Expr]:
    data = parse_json(text, where)
    if not isinstance(data, dict) or set(data) != set(keys):
        raise ModelError(f"{where}: expected an object with the keys {list(keys)}, got {str(data)[:80]!r}")
    parts = [from_dict(data[k], f"{where} ({k})") for k in keys]
    for k, part in zip(keys, parts, strict=True):
        if not isinstance(part, Expr):
            raise ModelError(f"{where}: component {k!r} must be a scalar expression, got a {part!r}")
    return parts


def _vec3(other: object) -> Vec3:
    if not isinstance(other, Vec3):
        raise ModelError(f"expected a Vec3, got {type(other).__name__}")
    return other


def _vec4(other: object) -> Vec4:
    if not isinstance(other, Vec4):
        raise ModelError(f"expected a Vec4, got {type(other).__name__}")
    return other


class Vec4:
    """A four-vector ``(e, px, py, pz)`` of real expressions, metric (+,-,-,-) (laddu's ``Vec4``).

    Parameters
    ----------
    e, px, py, pz : Expr or float
        Energy and momentum components (real).

    Examples
    --------
    >>> import laddu_dask as ld
    >>> p = ld.Vec4(5.0, 0.0, 0.0, 3.0)
    >>> p.mass(), p.e()
    (Expr(const 4.0), Expr(const 5.0))
    >>> ld.Vec4(1.0, 2.0, 0.0, 0.0).m()  # spacelike: i sqrt(-m^2), as in laddu
    Expr(const 1.7320508075688772j)
    """

    __slots__ = ("_e", "_px", "_py", "_pz")

    def __init__(self, e: ExprLike, px: ExprLike, py: ExprLike, pz: ExprLike) -> None:
        self._e = _real(e, "Vec4.e")
        self._px = _real(px, "Vec4.px")
        self._py = _real(py, "Vec4.py")
        self._pz = _real(pz, "Vec4.pz")

    @classmethod
    def event(cls, prefix: str) -> Vec4:
        """The four-vector stored in columns ``prefix_e, prefix_px, prefix_py, prefix_pz``."""
        if not isinstance(prefix, str) or not prefix:
            raise ModelError(f"a four-vector name must be a non-empty string, got {prefix!r}")
        return cls(*(column(f"{prefix}_{c}") for c in P4_COMPONENTS))

    def e(self) -> Expr:
        """The energy."""
        return self._e

    def px(self) -> Expr:
        """The x momentum component."""
        return self._px

    def py(self) -> Expr:
        """The y momentum component."""
        return self._py

    def pz(self) -> Expr:
        """The z momentum component."""
        return self._pz

    def __iter__(self) -> Iterator[Expr]:
        return iter((self._e, self._px, self._py, self._pz))

    def __repr__(self) -> str:
        return f"Vec4({self._e!r}, {self._px!r}, {self._py!r}, {self._pz!r})"

    def as_expr(self) -> Vector:
        """The components as a vector-valued expression (laddu's ``as_expr``): a
        :class:`~laddu_dask.expr.linalg.Vector` ``[e, px, py, pz]``."""
        return Vector(list(self))

    def to_json(self) -> str:
        """laddu's JSON of the four-vector: ``{"e": <expr>, "px": ..., "py": ..., "pz": ...}``."""
        return _vector_json(self, P4_COMPONENTS)

    @staticmethod
    def from_json(json: str) -> Vec4:
        """The four-vector of laddu's JSON text (:meth:`to_json`).

        Examples
        --------
        >>> import laddu_dask as ld
        >>> p = ld.Vec4.event("beam")
        >>> ld.Vec4.from_json(json=p.to_json()).e()
        Expr(column 'beam_e')
        """
        return Vec4(*_vector_parts(json, P4_COMPONENTS, "Vec4.from_json"))

    def __add__(self, other: Vec4) -> Vec4:
        return Vec4(*(a + b for a, b in zip(self, _vec4(other))))

    def __sub__(self, other: Vec4) -> Vec4:
        return Vec4(*(a - b for a, b in zip(self, _vec4(other))))

    def __neg__(self) -> Vec4:
        return Vec4(*(-a for a in self))

    def __matmul__(self, other: Vec4) -> Expr:
        return self.dot(other)

    def momentum(self) -> Vec3:
        """The momentum three-vector."""
        return Vec3(self._px, self._py, self._pz)

    vec3 = momentum

    def m2(self) -> Expr:
        """Invariant mass squared ``e^2 - |p|^2`` (real)."""
        return self._e * self._e - self.momentum().mag2()

    mag2 = m2

    def mass(self) -> Expr:
        """Invariant mass ``sqrt(m^2)``, laddu's principal root: ``i sqrt(-m^2)`` when
        ``m^2 < 0``, so the expression is complex (a selection compares its real part)."""
        return self.m2().sqrt()

    m = mass
    mag = mass

    def beta(self) -> Vec3:
        """Velocity ``p / e``."""
        return self.momentum() / self._e

    def gamma(self) -> Expr:
        """Lorentz factor ``e / mass()`` (complex for ``m^2 < 0``, as in laddu)."""
        return self._e / self.mass()

    def dot(self, other: Vec4) -> Expr:
        """Minkowski product; also ``self @ other``."""
        other = _vec4(other)
        return self._e * other._e - self.momentum().dot(other.momentum())

    def boost(self, beta: Vec3) -> Vec4:
        """This four-vector seen from a frame moving with velocity ``-beta`` (``|beta| < 1``).

        ``p.boost(-x.beta())`` takes ``p`` into the rest frame of ``x``.
        The form ``(gamma - 1) / beta^2 = gamma^2 / (gamma + 1)`` stays finite at rest.
        """
        beta = _vec3(beta)
        b2 = beta.mag2()
        gamma = 1.0 / apply("sqrt", 1.0 - b2)
        bp = beta.dot(self.momentum())
        coef = gamma * gamma / (gamma + 1.0) * bp + gamma * self._e
        p = self.momentum() + beta * coef
        return Vec4(gamma * (self._e + bp), p.px(), p.py(), p.pz())
