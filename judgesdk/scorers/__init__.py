"""Floor 7. Scorer strategies: each builds prompts from a template, asks the provider layer for a label
distribution or a generation, and returns a :class:`judgesdk.core.types.JudgeResult`.

Every scorer module exposes one coroutine with the same contract::

    async def score(provider, item, criterion, options: ScorerOptions, method: str) -> JudgeResult

and declares each method it implements as a :class:`~judgesdk.scorers.spec.MethodSpec` (its options, whether its
score is on the criterion's scale, whether it reads fused fits...): the rest of judgesdk reads those facts from
the spec, never from a table of method names. :mod:`judgesdk.scorers.registry` finds a method's spec by name
(built in, :func:`register`, or an entry point of the group ``judgesdk.methods``) and imports its module only
when it is used, so a method's dependencies load only then; :func:`scorer_for` gives its coroutine. Shared
steps live in ``common``.

Also here: ``postprocess`` (Filtering and Binning over results, 002) and ``method_options`` (which option
each method reads).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.fused`.
"""

from __future__ import annotations

from judgesdk.scorers.registry import is_method, method_names, method_spec, register, scorer_for, unregister
from judgesdk.scorers.spec import MethodSpec, ScoreFn

__all__ = ["MethodSpec", "ScoreFn", "is_method", "method_names", "method_spec", "register", "scorer_for", "unregister"]

