"""Floor 10. Juries: several judges score every item, one verdict is made of their scores, and disagreement is reported.

Why: one judge's errors are its own (its model, its prompt, its biases), and nothing in its score says how
large they are. Judges that differ in provider or method err differently, so their aggregate is steadier
than any one of them (Verga et al. 2024, "Replacing Judges with Juries"), and where they disagree on an
item that item is the one a person should look at. A jury is configured in ``[jury]``
(:class:`judgesdk.judging.judge_config.JuryConfig`) and judges through one :class:`~judgesdk.judging.judge.Judge` per member.

* **Verdict per item** (:func:`verdict`): every judge scores the item (concurrently); ``aggregate`` makes one
  score of those that answered: ``mean``, ``median``, ``majority`` (the most frequent label, each judge's
  label being its distribution's mode, else the scale label nearest its score; a tie goes to the tied label
  nearest the judges' median score, then to the lower one) or ``weights`` (a weighted mean, see
  :func:`fit_weights`). Fewer than ``min_judges`` scores: no score, status ``error`` (``unparsed`` when every
  judge that failed gave a final unparsed verdict) and a message saying how many answered. ``details`` holds
  each judge's score, their spread (max - min), ``flagged`` (spread above ``disagreement``, default a quarter
  of the scale's range) and ``judges_ok``; ``parts`` each judge's own result by name.
* **Agreement per run** (:func:`agreement`): Krippendorff's alpha at the interval level over the judges'
  scores (1: they agree exactly; 0: no better than chance pairing; below 0: systematic disagreement).
  Computed in closed form, O(items x judges); ``tests/jury/test_jury.py`` checks it against the ``krippendorff``
  package, whose coincidence matrices take items x values^2 memory on continuous scores (1.4 GB for 200 items
  of 3 judges, measured), too much for a run's summary.
* **Weights** (:func:`fit_weights`): on human labels of items of the run (``weights_from``, the gate's
  ``{"id", "label"}`` JSONL), the convex combination of the judges' scores closest to the labels in least
  squares (weights >= 0 summing to 1: judges - 1 free parameters, and the score stays on the scale). It
  says whom to trust; it does not correct a bias every judge shares (that is calibration's work).

A jury runs on its first judge's event loop (:meth:`Judge.run`), so every judge's clients live on one loop;
judges with the same provider config share one adapter (one model load, one rate limit), which the jury
closes once.

Modules: :mod:`~judgesdk.jury.panel` (the jury itself: one judge per member, and the question a jury answers) and
:mod:`~judgesdk.jury.consensus` (one item's verdict, the judges' weights and their agreement: statistics only, no judging).

May import: every floor up to :mod:`judgesdk.judging` and :mod:`judgesdk.meta`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.jury.consensus import Agreement, Weights, agreement, fit_weights, interval_alpha, verdict
    from judgesdk.jury.panel import Jury, jury_ask

__all__ = [
    "Agreement",
    "agreement",
    "fit_weights",
    "interval_alpha",
    "Jury",
    "jury_ask",
    "verdict",
    "Weights",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("Agreement", "Weights", "agreement", "fit_weights", "interval_alpha", "verdict",), "judgesdk.jury.consensus"),
        **dict.fromkeys(("Jury", "jury_ask",), "judgesdk.jury.panel"),
    },
    globals(),
)
