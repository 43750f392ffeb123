"""Quantum-number selection rules for two-body decays (laddu 0.28.1's rules API).

A :class:`RuleSet` states the conservation and symmetry laws assumed for a decay ``parent ->
daughter_a daughter_b``; for one orbital angular momentum ``l`` and coupled spin ``s`` it
reports each law's outcome as a :class:`RuleCheck` in a :class:`RuleReport`.
:class:`~laddu_dask.expr.selection_rules.SelectionRules` couples the daughter spins, scans
``L = 0 .. max_l`` and keeps the :class:`PartialWave` candidates that couple to the parent
spin and that no enforced rule rejects, as :class:`AllowedPartialWave` items with the
inferred final-state parities. Rule names and order, outcome categories, messages and JSON
forms are laddu's. A missing particle property rejects nothing unless the rule's
unknown-input policy is ``"reject"``.

Examples
--------
>>> import laddu_dask as ld
>>> P = ld.particles
>>> report = ld.RuleSet.strong().evaluate(P.RHO_ZERO, daughter_a=P.PI_PLUS,
...                                       daughter_b=P.PI_MINUS, l=1, s=0)
>>> report.is_allowed, [(c.rule, c.outcome) for c in report.checks][:2]
(True, [('Parity', 'pass'), ('Isospin', 'pass')])
"""

from __future__ import annotations

import json as _json
import operator
from collections.abc import Iterable
from fractions import Fraction
from typing import Any

from laddu_dask.errors import ModelError
from laddu_dask.expr.particles import Particle
from laddu_dask.expr.quantum import L, Parity, S
from laddu_dask.expr.rule_checks import (
    ORDER,
    RULES,
    Props,
    Raw,
    as_instance,
    as_j,
    as_l,
    as_s,
    couples,
    half_text,
    parity_name,
    properties,
    rule_name,
)

__all__ = ["AllowedPartialWave", "PartialWave", "RuleCheck", "RuleReport", "RuleSet"]

Policy = tuple[str, "str | None", str]  # (Enforce | Ignore | DiagnoseOnly, reason, Allow | Reject | Warn)
_UNKNOWN = {"allow": "Allow", "reject": "Reject", "warn": "Warn"}
_ENFORCE: Policy = ("Enforce", None, "Allow")


def _slot(name: str, doc: str) -> Any:
    """A read-only property that returns the attribute ``name``."""
    return property(operator.attrgetter(name), doc=doc)


def _dumps(obj: Any) -> str:
    return _json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


class _Value:
    """Value equality, hashing and laddu's JSON for the immutable types below."""

    __slots__ = ()

    def _key(self) -> Any:
        raise NotImplementedError

    def _obj(self) -> Any:
        raise NotImplementedError

    @classmethod
    def _from_obj(cls, obj: Any) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._key()))

    def to_json(self) -> str:
        """Serialize to JSON, in laddu's format."""
        return _dumps(self._obj())

    @classmethod
    def from_json(cls, json: str) -> Any:
        """Construct from JSON written by laddu or laddu-dask (``ModelError`` if invalid)."""
        try:
            return cls._from_obj(_json.loads(json))
        except ModelError:
            raise
        except (AttributeError, KeyError, TypeError, ValueError) as exc:
            raise ModelError(f"invalid {cls.__name__} JSON: {json!r}") from exc


class PartialWave(_Value):
    """A coupled ``JLS`` partial wave (laddu's ``PartialWave``).

    Parameters
    ----------
    j, s : J, S, L, int, float or fractions.Fraction
        Total angular momentum and coupled spin: non-negative integers or half-integers.
    l : L, J, S, int, float or fractions.Fraction
        Orbital angular momentum: a non-negative integer.

    Raises
    ------
    ModelError
        (a ``ValueError``) if a value is negative or not (half-)integral as required, or if
        ``j`` is not one of ``|l - s|, ..., l + s``.
    TypeError
        If a value is not a number or a quantum number.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> wave = ld.PartialWave(1.5, 1, 0.5)
    >>> wave, wave.j, wave.l, wave.s, wave.to_json()
    (PartialWave('2P3/2'), J(3/2), L(1), S(1/2), '{"j":3,"l":1,"s":1}')
    """

    __slots__ = ("_j", "_l", "_s")

    def __init__(self, j: Any, l: Any, s: Any) -> None:  # noqa: E741 - laddu's keyword
        jj, ll, ss = as_j(j), as_l(l), as_s(s)
        if not couples(jj.doubled, ll.doubled, ss.doubled):
            raise ModelError(f"j, l, and s must be compatible, got j = {half_text(jj.doubled)}, "
                             f"l = {ll.value}, s = {half_text(ss.doubled)}")
        self._j, self._l, self._s = jj, ll, ss

    j = _slot("_j", """J: Total angular momentum.""")
    l = _slot("_l", """L: Orbital angular momentum.""")
    s = _slot("_s", """S: Coupled daughter spin.""")

    @property
    def label(self) -> str:
        """Spectroscopic label ``{2S+1}{L}{J}``, such as ``1S0`` or ``2P3/2``."""
        return f"{self._s.doubled + 1}{self._l}{half_text(self._j.doubled)}"

    def __repr__(self) -> str:
        return f"PartialWave('{self.label}')"

    def _key(self) -> tuple[int, int, int]:
        return (self._j.doubled, self._l.value, self._s.doubled)

    def _obj(self) -> dict[str, int]:
        return dict(zip("jls", self._key(), strict=True))

    @classmethod
    def _from_obj(cls, obj: Any) -> PartialWave:
        return cls(Fraction(obj["j"], 2), obj["l"], Fraction(obj["s"], 2))


class AllowedPartialWave(_Value):
    """A partial wave with the final-state parities inferred for one channel.

    Parameters
    ----------
    wave : PartialWave
        The coupled angular quantum numbers.
    parity, c_parity : Parity, int or str, optional
        Final-state parity and C-parity; ``None`` where they cannot be inferred.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> allowed = ld.AllowedPartialWave(ld.PartialWave(1, 1, 0), parity=-1)
    >>> allowed.wave.label, allowed.parity, allowed.c_parity is None
    ('1P1', Parity.NEGATIVE, True)
    """

    __slots__ = ("_wave", "_parity", "_c_parity")

    def __init__(self, wave: PartialWave, parity: Any = None, c_parity: Any = None) -> None:
        self._wave = as_instance(wave, PartialWave)
        self._parity, self._c_parity = (None if p is None else Parity(p) for p in (parity, c_parity))

    wave = _slot("_wave", """PartialWave: Coupled angular quantum numbers.""")
    parity = _slot("_parity", """Parity or None: Inferred final-state parity.""")
    c_parity = _slot("_c_parity", """Parity or None: Inferred final-state C-parity.""")

    def __repr__(self) -> str:
        return f"AllowedPartialWave({self._wave!r}, parity={self._parity!r}, c_parity={self._c_parity!r})"

    def _key(self) -> tuple:
        return (self._wave, self._parity, self._c_parity)

    def _obj(self) -> dict[str, Any]:
        parities = {"parity": parity_name(self._parity), "c_parity": parity_name(self._c_parity)}
        return {"wave": self._wave._obj(), **parities}

    @classmethod
    def _from_obj(cls, obj: Any) -> AllowedPartialWave:
        return cls(PartialWave._from_obj(obj["wave"]), obj["parity"], obj["c_parity"])


#: outcome category -> laddu's JSON tag and the fields of its payload
_OUTCOMES = {"pass": ("Pass", ("message",)), "fail": ("Fail", ("message",)),
             "unknown_allowed": ("UnknownAllowed", ("missing", "message")),
             "warning": ("Warning", ("missing", "message")), "ignored": ("Ignored", ("reason",)),
             "diagnostic": ("Diagnostic", ("passed", "reason", "message"))}
_TAGS = {tag: outcome for outcome, (tag, _) in _OUTCOMES.items()}


class RuleCheck(_Value):
    """The outcome of one selection rule (laddu's ``RuleCheck``).

    ``outcome`` is ``"pass"``, ``"fail"``, ``"unknown_allowed"`` (inputs missing, allowed),
    ``"warning"`` (inputs missing, reported), ``"ignored"`` or ``"diagnostic"`` (evaluated,
    never rejecting); only ``"fail"`` rejects a channel.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> P = ld.particles
    >>> check = ld.RuleSet.strong().evaluate(
    ...     P.RHO_ZERO, daughter_a=P.PI_PLUS, daughter_b=P.PI_MINUS, l=0, s=0).checks[0]
    >>> check, check.is_failure, check.missing
    (RuleCheck(rule='Parity', outcome='fail'), True, [])
    >>> check.message
    'parity is not conserved for L = 0: parent parity is Negative, final parity is Positive'
    """

    __slots__ = ("_rule", "_outcome", "_message", "_missing", "_reason", "_passed")

    def __init__(self, rule: str, outcome: str, *, message: str | None = None,
                 missing: Iterable[str] = (), reason: str | None = None,
                 passed: bool | None = None) -> None:
        if outcome not in _OUTCOMES:
            raise ModelError(f"a rule outcome must be one of {sorted(_OUTCOMES)}, got {outcome!r}")
        self._rule, self._outcome = rule_name(rule), outcome
        self._message = None if outcome == "ignored" else message
        self._missing = tuple(missing) if outcome in ("unknown_allowed", "warning") else ()
        self._reason, self._passed = reason, passed

    rule = _slot("_rule", """str: laddu's name of the rule, such as ``"IsospinProjection"``.""")
    outcome = _slot("_outcome", """str: The outcome category.""")
    message = _slot("_message", """str or None: Human-readable explanation (``None`` for an ignored rule).""")

    @property
    def missing(self) -> list[str]:
        """list[str]: The inputs that were unavailable, such as ``"parent.isospin"``."""
        return list(self._missing)

    @property
    def is_failure(self) -> bool:
        """bool: Whether this check rejects the channel."""
        return self._outcome == "fail"

    def __repr__(self) -> str:
        return f"RuleCheck(rule='{self._rule}', outcome='{self._outcome}')"

    def _key(self) -> tuple:
        return (self._rule, self._outcome, self._message, self._missing, self._reason, self._passed)

    def _obj(self) -> dict[str, Any]:
        tag, fields = _OUTCOMES[self._outcome]
        values = {"message": self._message, "missing": list(self._missing), "reason": self._reason,
                  "passed": self._passed}
        return {"rule": self._rule, "outcome": {tag: {f: values[f] for f in fields}}}

    @classmethod
    def _from_obj(cls, obj: Any) -> RuleCheck:
        ((tag, payload),) = obj["outcome"].items()
        if obj["rule"] not in RULES:
            raise ValueError(obj["rule"])
        return cls(obj["rule"], _TAGS[tag], **payload)


class RuleReport(_Value):
    """Every check of a :class:`RuleSet` for one candidate, in rule order.

    ``bool(report)`` is ``report.is_allowed``: no enforced rule failed; ``len(report)`` is the
    number of checks.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> P = ld.particles
    >>> report = ld.RuleSet.weak().evaluate(
    ...     P.PI_PLUS, daughter_a=P.ANTIMUON, daughter_b=P.MUON_NEUTRINO, l=0, s=0)
    >>> bool(report), len(report), report.checks[-1].message
    (True, 7, 'daughters are not identical particles')
    """

    __slots__ = ("_checks",)

    def __init__(self, checks: Iterable[RuleCheck] = ()) -> None:
        self._checks = tuple(as_instance(c, RuleCheck) for c in checks)

    @property
    def checks(self) -> list[RuleCheck]:
        """The checks, in laddu's deterministic rule order."""
        return list(self._checks)

    @property
    def is_allowed(self) -> bool:
        """Whether no enforced rule failed."""
        return not any(c.is_failure for c in self._checks)

    def __bool__(self) -> bool:
        return self.is_allowed

    def __len__(self) -> int:
        return len(self._checks)

    def __repr__(self) -> str:
        return f"RuleReport(is_allowed={self.is_allowed}, checks={list(self._checks)!r})"

    def _key(self) -> tuple:
        return self._checks

    def _obj(self) -> dict[str, Any]:
        return {"checks": [c._obj() for c in self._checks]}

    @classmethod
    def _from_obj(cls, obj: Any) -> RuleReport:
        return cls(RuleCheck._from_obj(c) for c in obj["checks"])


def _apply(rule: str, policy: Policy, raw: Raw) -> RuleCheck:
    """One rule's check: its raw outcome under its policy (mode and unknown-input policy)."""
    mode, reason, unknown = policy
    kind, message, missing = raw
    if mode == "DiagnoseOnly":
        passed = {"pass": True, "fail": False}.get(kind)
        return RuleCheck(rule, "diagnostic", message=message, reason=reason, passed=passed)
    if kind != "unknown":
        return RuleCheck(rule, kind, message=message)
    if unknown == "Reject":
        return RuleCheck(rule, "fail", message=f"{message}; unknown inputs are rejected by policy")
    outcome = "unknown_allowed" if unknown == "Allow" else "warning"
    return RuleCheck(rule, outcome, message=message, missing=missing)


class RuleSet(_Value):
    """Configurable quantum-number rules for a two-body decay (laddu's ``RuleSet``).

    Start from :meth:`angular` (no rule), :meth:`strong`, :meth:`electromagnetic` or
    :meth:`weak` and vary it with :meth:`enforce`, :meth:`enforce_strict`, :meth:`disable`
    and :meth:`with_unknown_policy`, which return new rule sets.  Rule names are laddu's
    (``"CParity"``); case and characters other than letters and digits are ignored
    (``"c_parity"``), and ``"i3"`` names ``"IsospinProjection"``.

    Examples
    --------
    >>> import laddu_dask as ld
    >>> P = ld.particles
    >>> rules = ld.RuleSet.strong().enforce("c_parity").enforce("g-parity")
    >>> rules.enabled_rules[:5]
    ['Parity', 'Isospin', 'IsospinProjection', 'CParity', 'GParity']
    >>> rules.evaluate(P.RHO_ZERO, daughter_a=P.PI_ZERO, daughter_b=P.PI_ZERO, l=1, s=0).is_allowed
    False
    """

    __slots__ = ("_policies",)

    def __init__(self) -> None:
        self._policies: dict[str, Policy] = {}

    @staticmethod
    def _of(policies: dict[str, Policy]) -> RuleSet:
        rules = RuleSet()
        rules._policies = dict(sorted(policies.items(), key=lambda item: ORDER[item[0]]))
        return rules

    def _with(self, rule: str, policy: Policy | None) -> RuleSet:
        policies = {r: p for r, p in self._policies.items() if r != rule}
        return RuleSet._of(policies if policy is None else {**policies, rule: policy})

    @staticmethod
    def angular() -> RuleSet:
        """No rule: only the angular-momentum coupling (which :class:`SelectionRules` applies)."""
        return RuleSet()

    @staticmethod
    def strong() -> RuleSet:
        """Parity, isospin and its projection, charge, flavours, baryon number, identical particles."""
        return RuleSet._of(dict.fromkeys(("Parity", "Isospin", "IsospinProjection", "Charge",
                                          "Strangeness", "Charm", "Bottomness", "Topness", "BaryonNumber",
                                          "IdenticalParticleSymmetry"), _ENFORCE))

    @staticmethod
    def electromagnetic() -> RuleSet:
        """The strong rules without total isospin, which electromagnetism breaks."""
        return RuleSet.strong().disable("Isospin")

    @staticmethod
    def weak() -> RuleSet:
        """Charge, baryon number, every lepton family's number, total lepton number, identical
        particles."""
        return RuleSet._of(dict.fromkeys(("Charge", "BaryonNumber", "ElectronLeptonNumber",
                                          "MuonLeptonNumber", "TauLeptonNumber", "LeptonNumber",
                                          "IdenticalParticleSymmetry"), _ENFORCE))

    @property
    def enabled_rules(self) -> list[str]:
        """The configured rules, in report order."""
        return list(self._policies)

    def enforce(self, rule: str) -> RuleSet:
        """A copy that enforces ``rule``, allowing missing inputs."""
        return self._with(rule_name(rule), _ENFORCE)

    def enforce_strict(self, rule: str) -> RuleSet:
        """A copy that enforces ``rule`` and rejects candidates with missing inputs."""
        return self._with(rule_name(rule), ("Enforce", None, "Reject"))

    def disable(self, rule: str) -> RuleSet:
        """A copy without ``rule``."""
        return self._with(rule_name(rule), None)

    def with_unknown_policy(self, rule: str, policy: str) -> RuleSet:
        """A copy whose ``rule`` treats missing inputs by ``policy``: ``"allow"``, ``"warn"``
        or ``"reject"`` (any case); ``rule`` is enforced if it was not configured."""
        name = rule_name(rule)
        unknown = _UNKNOWN.get(policy.lower()) if isinstance(policy, str) else None
        if unknown is None:
            raise ModelError("unknown policy must be 'allow', 'reject', or 'warn'")
        mode, reason, _ = self._policies.get(name, _ENFORCE)
        return self._with(name, (mode, reason, unknown))

    def evaluate(self, parent: Particle, *, daughter_a: Particle, daughter_b: Particle, l: Any,
                 s: Any) -> RuleReport:  # noqa: E741 - laddu's keyword
        """Every configured rule for ``parent -> daughter_a daughter_b`` with orbital angular
        momentum ``l`` (a non-negative integer) and coupled spin ``s`` (a non-negative integer
        or half-integer)."""
        trio = [properties(as_instance(p, Particle)) for p in (parent, daughter_a, daughter_b)]
        return self._evaluate(trio, as_l(l), as_s(s))

    def _evaluate(self, trio: list[Props], l: L, s: S) -> RuleReport:  # noqa: E741
        return RuleReport(RuleCheck(rule, "ignored", reason=policy[1]) if policy[0] == "Ignore"
                          else _apply(rule, policy, RULES[rule](*trio, l, s))
                          for rule, policy in self._policies.items())

    def __repr__(self) -> str:
        return f"RuleSet({self.enabled_rules!r})"

    def _key(self) -> tuple:
        return tuple(self._policies.items())

    def _obj(self) -> dict[str, Any]:
        return {"policies": {rule: {"mode": mode if mode == "Enforce" else {mode: {"reason": reason}},
                                    "unknown": unknown}
                             for rule, (mode, reason, unknown) in self._policies.items()}}

    @classmethod
    def _from_obj(cls, obj: Any) -> RuleSet:
        policies: dict[str, Policy] = {}
        for rule, policy in obj["policies"].items():
            mode, reason = policy["mode"], None
            if isinstance(mode, dict):
                ((mode, payload),) = mode.items()
                reason = payload["reason"]
            if rule not in RULES or mode not in ("Enforce", "Ignore", "DiagnoseOnly") or (
                    policy["unknown"] not in _UNKNOWN.values()):
                raise ValueError(rule)
            policies[rule] = (mode, reason, policy["unknown"])
        return cls._of(policies)
