"""A user model for ``laddu-dask fit``: the K_S K_S intensity written from scratch.

``custom_fit.toml`` refers to it as ``model = { file = "custom_model.py", function =
"build", options = {...} }``; the function gets the ``options`` as keyword arguments and
returns a ``laddu_dask.Model`` (or an expression). It reads the four-vector columns
``beam``, ``kshort1`` and ``kshort2`` of laddu's Parquet convention.

Examples
--------
>>> from custom_model import build  # doctest: +SKIP
>>> build(d_waves=[0]).parameter_names  # doctest: +SKIP
['s_mass', 's_width', 'd_mass', 'd_width', 'd0_re', 'd0_im']
"""

import laddu_dask as ld

M_KS = 0.497611


def build(lineshape: str = "bw", d_waves: list[int] = (0, 1, 2), fix_widths: bool = False) -> ld.Model:
    """``| BW_S Y_0^0 + BW_D sum_m c_m Y_2^m |^2`` over the K_S K_S decay angles.

    Parameters
    ----------
    lineshape : {"bw", "rbw"}
        Constant-width or relativistic Breit-Wigners.
    d_waves : list of int
        The D-wave projections m (0, 1, 2) in the model.
    fix_widths : bool
        Hold both widths at 0.112 (S) and 0.086 (D) GeV.
    """
    beam = ld.Vec4.event("beam")
    k1, k2 = ld.Vec4.event("kshort1"), ld.Vec4.event("kshort2")
    x = k1 + k2
    k = k1.boost(-x.beta()).vec3()          # K_S 1 in the K_S K_S rest frame
    z = x.vec3().unit()
    y = beam.vec3().cross(z).unit()
    costheta = k.dot(z) / k.mag()
    phi = ld.atan2(k.dot(y), k.dot(y.cross(z)))
    s = x.m2()

    def width(name: str, value: float):
        if fix_widths:
            return ld.parameter(name, fixed=value)
        return ld.parameter(name, initial=value, bounds=(0.01, 1.0))

    def line(mass, width_, l):  # noqa: E741
        if lineshape == "bw":
            return ld.breit_wigner(s, mass=mass, width=width_)
        return ld.relativistic_breit_wigner(s, mass=mass, width=width_, mass1=M_KS, mass2=M_KS, l=l)

    bw_s = line(ld.parameter("s_mass", initial=1.5, bounds=(1.0, 2.0)), width("s_width", 0.112), 0)
    bw_d = line(ld.parameter("d_mass", initial=1.52, bounds=(1.0, 2.0)), width("d_width", 0.086), 2)
    d_wave = 0
    for m in d_waves:
        c = ld.complex(ld.parameter(f"d{m}_re", initial=0.5), ld.parameter(f"d{m}_im", initial=0.0))
        d_wave = d_wave + c * ld.spherical_harmonic(2, m, costheta=costheta, phi=phi)
    amplitude = bw_s * ld.spherical_harmonic(0, 0, costheta=costheta, phi=phi) + bw_d * d_wave
    return ld.Model(amplitude.norm_sqr())
