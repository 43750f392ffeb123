"""laddu's ``amplitudes`` module: the standard resonance and coupled-channel builders (``ld.amplitudes``).

laddu 0.28.1 offers its line shapes and K-matrix builders twice, at the top level and in
``laddu.amplitudes``; both are the same functions.  So are these: each name here is the
top-level builder of laddu-dask (:mod:`laddu_dask.expr.lineshapes`,
:mod:`laddu_dask.expr.kmatrix`), with laddu's keywords and numbers.

Examples
--------
>>> import laddu_dask as ld
>>> ld.amplitudes.breit_wigner is ld.breit_wigner
True
>>> complex(ld.amplitudes.breit_wigner(2.0, mass=1.0, width=1.0).attr)
(-0.5+0.5j)
"""

from laddu_dask.expr.kmatrix import f_vector, k_matrix, p_vector
from laddu_dask.expr.lineshapes import (
    blatt_weisskopf_barriers,
    breit_wigner,
    relativistic_breit_wigner,
    relativistic_breit_wigner_custom,
)

__all__ = ["blatt_weisskopf_barriers", "breit_wigner", "f_vector", "k_matrix", "p_vector",
           "relativistic_breit_wigner", "relativistic_breit_wigner_custom"]
