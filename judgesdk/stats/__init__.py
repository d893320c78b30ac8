"""Floor 2, statistics: plain functions over numbers, with nothing of judging in them.

* :mod:`~judgesdk.stats.groups`: one correlation over many small groups at once (the rows of a matrix), the
  core of meta-evaluation's levels, bootstrap and permutation tests, and of calibration reports.
* :mod:`~judgesdk.stats.ppi`: prediction-powered inference: a mean from a small human slice corrected by the
  judge's scores on the whole run (PPI++, the cross-fit interval, the difference of two runs' means).
* :mod:`~judgesdk.stats.pass_rate`: a pass rate corrected the same way (Rogan-Gladen), or refused.
* :mod:`~judgesdk.stats.intervals`: the :class:`Interval` both report, a mean's normal and a share's Wilson interval.
* :mod:`~judgesdk.stats.resampling`: the seeded bootstrap of a mean and the sign-flip test of the gates.
* :mod:`~judgesdk.stats.positional`: position bias of a comparison made in both orders.
* :mod:`~judgesdk.stats.isotonic`: the monotone least-squares fits behind calibration and the fused judge.

Each module is imported by its path (``from judgesdk.stats.ppi import ppi_mean``): NumPy and SciPy load
only where a statistic is computed.

May import: :mod:`judgesdk.core` (NumPy and SciPy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.stats.groups import METHODS, Method, check_method, group_values, p_value, single_value
    from judgesdk.stats.intervals import Interval, proportion_interval
    from judgesdk.stats.isotonic import fit_isotonic, fit_linear, pava
    from judgesdk.stats.pass_rate import PassRateRefusal, RoganGladen, rogan_gladen
    from judgesdk.stats.positional import OrderVerdict, position_bias
    from judgesdk.stats.ppi import PPIMean, PPIMethod, ppi_difference, ppi_drop_p, ppi_lambdas_left_out, ppi_mean
    from judgesdk.stats.resampling import bootstrap_mean_ci, sign_flip_p

__all__ = [
    "bootstrap_mean_ci",
    "check_method",
    "fit_isotonic",
    "fit_linear",
    "group_values",
    "Interval",
    "Method",
    "METHODS",
    "OrderVerdict",
    "p_value",
    "PassRateRefusal",
    "pava",
    "position_bias",
    "ppi_difference",
    "ppi_drop_p",
    "ppi_lambdas_left_out",
    "ppi_mean",
    "PPIMean",
    "PPIMethod",
    "proportion_interval",
    "rogan_gladen",
    "RoganGladen",
    "sign_flip_p",
    "single_value",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("METHODS", "Method", "check_method", "group_values", "p_value", "single_value",), "judgesdk.stats.groups"),
        **dict.fromkeys(("Interval", "proportion_interval",), "judgesdk.stats.intervals"),
        **dict.fromkeys(("fit_isotonic", "fit_linear", "pava",), "judgesdk.stats.isotonic"),
        **dict.fromkeys(("PassRateRefusal", "RoganGladen", "rogan_gladen",), "judgesdk.stats.pass_rate"),
        **dict.fromkeys(("OrderVerdict", "position_bias",), "judgesdk.stats.positional"),
        **dict.fromkeys(("PPIMean", "PPIMethod", "ppi_difference", "ppi_drop_p", "ppi_lambdas_left_out", "ppi_mean",), "judgesdk.stats.ppi"),
        **dict.fromkeys(("bootstrap_mean_ci", "sign_flip_p",), "judgesdk.stats.resampling"),
    },
    globals(),
)
