"""Quantum-number selection rules and partial waves, against laddu 0.28.1 as the oracle.

Every case is built with both libraries from the same description (``lib`` is ``laddu`` or
``laddu_dask``): the built-in particles both have, and hand-made particles that exercise
isospin projections, C- and G-parity, identical particles, self-conjugacy completion and
missing properties.  Reports must agree check by check (rule, outcome, failure flag,
missing inputs, message) and as JSON text; partial-wave lists must agree wave by wave.
"""

from __future__ import annotations

import itertools
import re
from fractions import Fraction

import pytest

import laddu_dask as ld
from laddu_dask.errors import LadduDaskError, ModelError


@pytest.fixture(scope="module")
def laddu():
    return pytest.importorskip("laddu")


NAMES = sorted(ld.particles.BUILTIN)

#: Hand-made particles: name -> keyword arguments in laddu's spelling (isospin as (I, I3)).
CUSTOM = {
    "pi+ I3": dict(species="pi+", antiparticle_species="pi-", spin=0, parity="-", charge=1,
                   isospin=(1, 1), g_parity="-"),
    "pi- I3": dict(species="pi-", antiparticle_species="pi+", spin=0, parity="-", charge=-1,
                   isospin=(1, -1), g_parity="-"),
    "pi0 I3": dict(species="pi0", self_conjugate=True, spin=0, parity="-", c_parity="+",
                   isospin=(1, 0), g_parity="-"),
    "rho0 I3": dict(species="rho0", antiparticle_species="rho0", spin=1, parity="-", c_parity="-",
                    isospin=(1, 0), g_parity="+"),
    "f0": dict(species="f0", spin=0, parity="+", c_parity="+", isospin=(0, 0), g_parity="+"),
    "h1": dict(species="h1", spin=1, parity="+", c_parity="-", isospin=(0, 0), g_parity="-"),
    "exotic 1-+": dict(spin=1, parity="-", c_parity="+", isospin=(1, 0)),
    "X (docs)": dict(species="X", self_conjugate=True, spin=2, parity="+", statistics="boson"),
    "Delta++": dict(species="Delta++", antiparticle_species="Delta++bar", spin=1.5, parity="+",
                    charge=2, isospin=(1.5, 1.5), baryon_number=1, strangeness=0, charm=0,
                    bottomness=0, topness=0, electron_lepton_number=0, muon_lepton_number=0,
                    tau_lepton_number=0),
    "p I3": dict(species="proton", antiparticle_species="antiproton", spin=0.5, parity="+",
                 charge=1, isospin=(0.5, 0.5), baryon_number=1),
    "fermion": dict(species="f", spin=0.5, statistics="fermion"),
    "fermion, no stats": dict(species="f", spin=Fraction(1, 2)),
    "boson, no spin": dict(species="b", statistics="boson"),
    "spin only": dict(spin=1),
    "species only": dict(species="pi0"),
    "antiparticle only": dict(antiparticle_species="pi0", self_conjugate=True),
    "equal names, not self-conjugate": dict(species="y", antiparticle_species="y", self_conjugate=False),
    "nothing": dict(),
}


def make(lib, key):
    """The particle ``key`` (a built-in constant or a CUSTOM name) built with ``lib``."""
    if key in ld.particles.BUILTIN:
        return getattr(lib.particles, key)
    kwargs = dict(CUSTOM[key])
    if "isospin" in kwargs:
        i, i3 = kwargs["isospin"]
        kwargs["isospin"] = lib.Isospin(i, projection=i3)
    if "statistics" in kwargs:
        kwargs["statistics"] = getattr(lib.Statistics, kwargs["statistics"].upper())
    return lib.Particle(key, **kwargs)


EVERY_RULE = ["Parity", "Isospin", "IsospinProjection", "CParity", "GParity", "Charge", "Strangeness",
              "Charm", "Bottomness", "Topness", "BaryonNumber", "ElectronLeptonNumber",
              "MuonLeptonNumber", "TauLeptonNumber", "LeptonNumber", "IdenticalParticleSymmetry",
              "ConventionalMesonJpc"]


def _every(lib, policy):
    rules = lib.RuleSet.angular()
    for rule in EVERY_RULE:
        rules = rules.with_unknown_policy(rule, policy)
    return rules


#: Rule sets, in laddu's spelling.
RULE_SETS = {
    "angular": lambda lib: lib.RuleSet.angular(),
    "strong": lambda lib: lib.RuleSet.strong(),
    "electromagnetic": lambda lib: lib.RuleSet.electromagnetic(),
    "weak": lambda lib: lib.RuleSet.weak(),
    "strong + C + G": lambda lib: lib.RuleSet.strong().enforce("c_parity").enforce("G-Parity"),
    "every rule, allow": lambda lib: _every(lib, "allow"),
    "every rule, warn": lambda lib: _every(lib, "WARN"),
    "every rule, reject": lambda lib: _every(lib, "Reject"),
    "strict + disabled": lambda lib: lib.RuleSet.strong().enforce_strict("i3").enforce_strict(
        "conventional meson jpc").disable("charge"),
    # ignored and diagnostic rules exist only through JSON in laddu's Python API
    "ignored + diagnostic": lambda lib: lib.RuleSet.from_json(
        '{"policies":{"Parity":{"mode":{"DiagnoseOnly":{"reason":"why"}},"unknown":"Warn"},'
        '"Isospin":{"mode":{"DiagnoseOnly":{"reason":null}},"unknown":"Reject"},'
        '"CParity":{"mode":{"Ignore":{"reason":"not a C eigenstate"}},"unknown":"Allow"},'
        '"Charge":{"mode":{"Ignore":{"reason":null}},"unknown":"Allow"},'
        '"IdenticalParticleSymmetry":{"mode":{"DiagnoseOnly":{"reason":"x"}},"unknown":"Warn"}}}'),
}

LS = [(0, 0), (1, 0), (1, 1), (2, 1), (0, 0.5), (3, 1.5), (2, 2), (1, Fraction(1, 2))]


def summary(report):
    checks = [(c.rule, c.outcome, c.is_failure, c.missing, c.message) for c in report.checks]
    return report.is_allowed, bool(report), len(report), checks, report.to_json()


def compare(laddu, rules, parent, a, b, l, s):
    ours = RULE_SETS[rules](ld).evaluate(make(ld, parent), daughter_a=make(ld, a), daughter_b=make(ld, b),
                                         l=l, s=s)
    theirs = RULE_SETS[rules](laddu).evaluate(make(laddu, parent), daughter_a=make(laddu, a),
                                              daughter_b=make(laddu, b), l=l, s=s)
    assert summary(ours) == summary(theirs), (rules, parent, a, b, l, s)


@pytest.mark.parametrize("rules", list(RULE_SETS))
def test_rule_sets_match_laddu(laddu, rules):
    assert RULE_SETS[rules](ld).enabled_rules == RULE_SETS[rules](laddu).enabled_rules
    assert RULE_SETS[rules](ld).to_json() == RULE_SETS[rules](laddu).to_json()


def test_every_builtin_pair_matches_laddu(laddu):
    """Every ordered pair of built-in daughters, a parent and (l, s) varying with the pair."""
    for i, (a, b) in enumerate(itertools.product(NAMES, NAMES)):
        parent = NAMES[(7 * i + 3) % len(NAMES)]
        l, s = LS[i % len(LS)]
        compare(laddu, "every rule, allow", parent, a, b, l, s)


@pytest.mark.parametrize("rules", list(RULE_SETS))
def test_physical_channels_match_laddu(laddu, rules):
    channels = [
        ("RHO_ZERO", "PI_PLUS", "PI_MINUS"), ("RHO_ZERO", "PI_ZERO", "PI_ZERO"),
        ("OMEGA", "PI_ZERO", "PHOTON"), ("PHI", "K_PLUS", "K_MINUS"), ("PHI", "K_SHORT", "K_LONG"),
        ("ETA", "PHOTON", "PHOTON"),
        ("J_PSI", "PROTON", "ANTIPROTON"), ("J_PSI", "ELECTRON", "POSITRON"),
        ("PI_PLUS", "ANTIMUON", "MUON_NEUTRINO"), ("K_PLUS", "PI_PLUS", "PI_ZERO"),
        ("LAMBDA", "PROTON", "PI_MINUS"), ("SIGMA_ZERO", "LAMBDA", "PHOTON"), ("Z_BOSON", "MUON", "ANTIMUON"),
        ("W_PLUS", "POSITRON", "ELECTRON_NEUTRINO"), ("D_ZERO", "K_MINUS", "PI_PLUS"),
        ("B_ZERO", "J_PSI", "K_SHORT"), ("HIGGS", "TAU", "ANTITAU"), ("OMEGA_MINUS", "LAMBDA", "K_MINUS"),
    ]
    custom = list(CUSTOM)
    channels += [
        ("rho0 I3", "pi+ I3", "pi- I3"), ("rho0 I3", "pi0 I3", "pi0 I3"), ("f0", "pi+ I3", "pi- I3"),
        ("f0", "pi0 I3", "pi0 I3"), ("h1", "rho0 I3", "pi0 I3"), ("exotic 1-+", "pi0 I3", "f0"),
        ("exotic 1-+", "rho0 I3", "pi0 I3"), ("X (docs)", "K_SHORT", "K_SHORT"),
        ("Delta++", "p I3", "pi+ I3"), ("Delta++", "PROTON", "PI_PLUS"),
        ("X (docs)", "fermion", "fermion"), ("X (docs)", "fermion, no stats", "fermion"),
        ("X (docs)", "boson, no spin", "boson, no spin"), ("f0", "species only", "antiparticle only"),
    ]
    for parent, a, b in channels:
        for l, s in LS:
            compare(laddu, rules, parent, a, b, l, s)
    for i, (a, b) in enumerate(itertools.product(custom, custom)):  # every pair of hand-made particles
        compare(laddu, rules, custom[(5 * i + 1) % len(custom)], a, b, *LS[i % len(LS)])


def test_custom_particles_are_completed_as_laddu_does(laddu):
    from laddu_dask.expr.rule_checks import properties

    for key in CUSTOM:
        ours, theirs = properties(make(ld, key)), make(laddu, key)
        for field in ("charge", "strangeness", "baryon_number", "tau_lepton_number", "statistics"):
            assert repr(ours[field]) == repr(getattr(theirs, f"{field}_checked")), (key, field)
        species = (theirs.species_checked, theirs.antiparticle_species_checked)
        assert (ours["species"], ours["anti"]) == species, key


def waves(lib, selection, parent, a, b):
    found = selection.allowed_partial_waves(make(lib, parent), daughter_a=make(lib, a),
                                            daughter_b=make(lib, b))
    return [(w.wave.label, None if w.parity is None else int(w.parity),
             None if w.c_parity is None else int(w.c_parity), w.to_json()) for w in found]


@pytest.mark.parametrize("kind", ["strong", "electromagnetic", "weak", "custom"])
@pytest.mark.parametrize("max_l", [0, 1, 3, 6])
def test_allowed_partial_waves_match_laddu(laddu, kind, max_l):
    def selection(lib):
        if kind == "custom":
            return lib.SelectionRules(RULE_SETS["strong + C + G"](lib), max_l=lib.L(max_l))
        return getattr(lib.SelectionRules, kind)(max_l)

    channels = [("RHO_ZERO", "PI_PLUS", "PI_MINUS"), ("J_PSI", "PROTON", "ANTIPROTON"),
                ("OMEGA", "RHO_ZERO", "PI_ZERO"), ("PHI", "K_PLUS", "K_MINUS"),
                ("Z_BOSON", "MUON", "ANTIMUON"),
                ("OMEGA_MINUS", "LAMBDA", "K_MINUS"), ("X (docs)", "K_SHORT", "K_SHORT"),
                ("rho0 I3", "pi+ I3", "pi- I3"), ("h1", "rho0 I3", "pi0 I3"), ("Delta++", "p I3", "pi+ I3"),
                ("exotic 1-+", "rho0 I3", "pi0 I3"), ("X (docs)", "fermion", "fermion"),
                ("nothing", "PI_PLUS", "PI_MINUS"), ("J_PSI", "boson, no spin", "PI_ZERO")]
    n = len(NAMES)
    channels += [(NAMES[5 * i % n], NAMES[(3 * i + 1) % n], NAMES[(11 * i + 2) % n]) for i in range(40)]
    for parent, a, b in channels:
        assert waves(ld, selection(ld), parent, a, b) == waves(laddu, selection(laddu), parent, a, b), (
            parent, a, b)


BAD = [(-1, 0, 1, "angular momentum must be nonnegative, got -1"),
       (0.3, 0, 1, "angular momentum must be an integer or half-integer, got 0.3"),
       (1, 0.5, 0.5, "orbital angular momentum must be an integer, got 0.5"),
       (1, -1, 0, "orbital angular momentum must be nonnegative, got -1"),
       (1, 1, -0.5, "spin must be nonnegative, got -0.5"),
       (2, 0, 0, "j, l, and s must be compatible, got j = 2, l = 0, s = 0"),
       (1.5, 1, 1, "j, l, and s must be compatible, got j = 3/2, l = 1, s = 1"),
       (float("nan"), 1, 0, "angular momentum must be an integer or half-integer, got nan"),
       (1, 1, 0.25, "spin must be an integer or half-integer, got 0.25"),
       (Fraction(1, 3), 1, 0, "angular momentum must be an integer or half-integer, got Fraction(1, 3)")]


@pytest.mark.parametrize("j, l, s, message", BAD)
def test_invalid_partial_waves_are_value_errors_as_in_laddu(laddu, j, l, s, message):
    with pytest.raises(laddu.LadduError):
        laddu.PartialWave(j, l, s)
    with pytest.raises(ModelError, match=f"^{re.escape(message)}$"):  # a ValueError and an ld.LadduError
        ld.PartialWave(j, l, s)


@pytest.mark.parametrize("bad", ["1", None, [1], ld.Parity(1)])
def test_non_numbers_are_type_errors(laddu, bad):
    # laddu's words: l takes an integer, j and s a half-integer too
    half = "expected J, S, L, an integer, a half-integer float, or fractions.Fraction"
    whole = "expected L, an integer, an integer-valued float, or fractions.Fraction"
    if not isinstance(bad, ld.Parity):
        with pytest.raises(TypeError, match=f"^{re.escape(half)}$"):
            laddu.PartialWave(bad, 1, 1)
    for args, message in [((bad, 1, 1), half), ((1, bad, 1), whole), ((1, 1, bad), half)]:
        with pytest.raises(TypeError, match=f"^{re.escape(message)}$"):
            ld.PartialWave(*args)


def test_valid_partial_waves_match_laddu(laddu):
    for j, l, s in [(0, 0, 0), (1, 0, 1), (1.5, 1, 0.5), (Fraction(5, 2), 2, Fraction(1, 2)), (2, 7, 5),
                    (ld.J(1), ld.L(1), ld.S(0)), (4, 6, 2)]:
        to_laddu = [getattr(laddu, type(x).__name__)(x.fraction) if isinstance(x, ld.J | ld.L | ld.S) else x
                    for x in (j, l, s)]
        ours, theirs = ld.PartialWave(j, l, s), laddu.PartialWave(*to_laddu)
        assert (ours.label, repr(ours), ours.to_json()) == (theirs.label, repr(theirs), theirs.to_json())
        assert (repr(ours.j), repr(ours.l), repr(ours.s)) == (repr(theirs.j), repr(theirs.l), repr(theirs.s))
        assert ld.PartialWave.from_json(theirs.to_json()) == ours
        assert laddu.PartialWave.from_json(ours.to_json()).label == ours.label
    assert ld.PartialWave(j=1, l=1, s=ld.S(0)) == ld.PartialWave(1, 1, 0)
    assert hash(ld.PartialWave(1, 1, 0)) == hash(ld.PartialWave(ld.J(1), 1.0, Fraction(0)))
    assert ld.PartialWave(1, 1, 0) != ld.PartialWave(1, 1, 1)


def test_evaluate_and_selection_inputs_are_checked_as_in_laddu(laddu):
    pi = ld.particles.PI_PLUS
    rules = ld.RuleSet.strong()
    for l, s, message in [(0.5, 0, "orbital angular momentum must be an integer, got 0.5"),
                          (-1, 0, "orbital angular momentum must be nonnegative, got -1"),
                          (1, -1, "spin must be nonnegative, got -1"),
                          (1, 0.3, "spin must be an integer or half-integer, got 0.3")]:
        with pytest.raises(laddu.LadduError):
            laddu.RuleSet.strong().evaluate(laddu.particles.PI_PLUS, daughter_a=laddu.particles.PI_PLUS,
                                            daughter_b=laddu.particles.PI_PLUS, l=l, s=s)
        with pytest.raises(ModelError, match=f"^{re.escape(message)}$"):
            rules.evaluate(pi, daughter_a=pi, daughter_b=pi, l=l, s=s)
    with pytest.raises(TypeError, match="takes 2 positional arguments but 6 were given"):
        rules.evaluate(pi, pi, pi, 1, 0)  # the daughters, l and s are keyword-only, as in laddu
    with pytest.raises(TypeError, match="not an instance of 'Particle'"):
        rules.evaluate("pi+", daughter_a=pi, daughter_b=pi, l=0, s=0)
    for max_l, message in [(-1, "must be nonnegative, got -1"), (1.5, "must be an integer, got 1.5")]:
        with pytest.raises(laddu.LadduError):
            laddu.SelectionRules.strong(max_l)
        with pytest.raises(ModelError, match=f"^orbital angular momentum {message}$"):
            ld.SelectionRules.strong(max_l)
    with pytest.raises(TypeError, match="not an instance of 'RuleSet'"):
        ld.SelectionRules("strong", max_l=2)
    for call in (lambda lib: lib.RuleSet.strong().enforce("foo"),
                 lambda lib: lib.RuleSet.strong().disable("c parity!x")):
        with pytest.raises(ValueError, match="unknown quantum rule") as theirs:
            call(laddu)
        with pytest.raises(ModelError, match="unknown quantum rule") as ours:
            call(ld)
        assert str(ours.value) == str(theirs.value)
    with pytest.raises(ValueError, match="unknown policy must be") as theirs:
        laddu.RuleSet.strong().with_unknown_policy("charge", "maybe")
    with pytest.raises(ModelError, match="unknown policy must be") as ours:
        ld.RuleSet.strong().with_unknown_policy("charge", "maybe")
    assert str(ours.value) == str(theirs.value)
    assert issubclass(ModelError, LadduDaskError) and ld.LadduError is LadduDaskError


def test_json_round_trips_and_crosses_to_laddu(laddu):
    P, Q = ld.particles, laddu.particles
    for name in RULE_SETS:
        ours, theirs = RULE_SETS[name](ld), RULE_SETS[name](laddu)
        assert ld.RuleSet.from_json(ours.to_json()) == ours
        assert ld.RuleSet.from_json(theirs.to_json()).to_json() == theirs.to_json()
        assert laddu.RuleSet.from_json(ours.to_json()).to_json() == ours.to_json()
        report = ours.evaluate(P.RHO_ZERO, daughter_a=P.PI_ZERO, daughter_b=P.PI_ZERO, l=1, s=0)
        other = theirs.evaluate(Q.RHO_ZERO, daughter_a=Q.PI_ZERO, daughter_b=Q.PI_ZERO, l=1, s=0)
        assert ld.RuleReport.from_json(report.to_json()) == report
        assert ld.RuleReport.from_json(other.to_json()) == report
        assert laddu.RuleReport.from_json(report.to_json()).to_json() == report.to_json()
        for check, their_check in zip(report.checks, other.checks, strict=True):
            assert ld.RuleCheck.from_json(check.to_json()) == check
            assert check.to_json() == their_check.to_json()
            assert repr(check) == repr(their_check)
            assert laddu.RuleCheck.from_json(check.to_json()).to_json() == check.to_json()
    allowed = ld.SelectionRules.strong(3).allowed_partial_waves(P.J_PSI, daughter_a=P.PROTON,
                                                              daughter_b=P.ANTIPROTON)
    for wave in allowed:
        assert ld.AllowedPartialWave.from_json(wave.to_json()) == wave
        assert laddu.AllowedPartialWave.from_json(wave.to_json()).to_json() == wave.to_json()
    bare = ld.AllowedPartialWave(ld.PartialWave(0.5, 0, 0.5))
    assert bare.to_json() == '{"wave":{"j":1,"l":0,"s":1},"parity":null,"c_parity":null}'
    assert ld.AllowedPartialWave.from_json(bare.to_json()) == bare
    selection = ld.SelectionRules(RULE_SETS["strict + disabled"](ld), max_l=4)
    assert ld.SelectionRules.from_json(selection.to_json()) == selection
    for cls, text in [(ld.PartialWave, "garbage"), (ld.PartialWave, '{"j":2}'),
                      (ld.RuleSet, '{"policies":1}'),
                      (ld.RuleSet, '{"policies":{"Foo":{"mode":"Enforce","unknown":"Allow"}}}'),
                      (ld.RuleCheck, '{"rule":"Charge","outcome":{"Maybe":{}}}'), (ld.RuleReport, "[]"),
                      (ld.AllowedPartialWave, "{}"), (ld.PartialWave, '{"j":2,"l":0,"s":0}')]:
        with pytest.raises(ModelError):
            cls.from_json(text)


def test_rule_set_variants_are_new_immutable_values():
    strong = ld.RuleSet.strong()
    assert strong.enforce("CParity") is not strong and "CParity" not in strong.enabled_rules
    assert strong.disable("parity").enabled_rules == strong.enabled_rules[1:]
    assert strong.enforce("charge") == strong and hash(strong.enforce("charge")) == hash(strong)
    assert ld.RuleSet.electromagnetic() == strong.disable("Isospin")
    assert ld.RuleSet.angular() == ld.RuleSet() and ld.RuleSet.angular().enabled_rules == []
    assert ld.RuleSet.angular().with_unknown_policy("topness", "warn").enabled_rules == ["Topness"]
    assert ld.SelectionRules.weak(2).rules == ld.RuleSet.weak() and ld.SelectionRules.weak(2).max_l == ld.L(2)
    report = strong.evaluate(ld.particles.PI_ZERO, daughter_a=ld.particles.PI_ZERO,
                             daughter_b=ld.particles.PI_ZERO, l=0, s=0)
    report.checks.clear()  # a copy
    assert len(report) == 10 and not report and report.checks[0].rule == "Parity"
