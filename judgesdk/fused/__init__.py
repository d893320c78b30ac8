"""Floor 6. The fused local judge: signals a small model is good at (:mod:`.signals`, :mod:`.text`), a fitted map to
the human scale (:mod:`.model`), and the nested cross-validation that fits it (:mod:`.fit`).

The fit files (``data/``) are versioned data with their provenance; the scorer that judges with them is
:mod:`judgesdk.scorers.fused`.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`.
"""
