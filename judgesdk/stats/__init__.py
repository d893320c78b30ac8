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
