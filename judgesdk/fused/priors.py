"""What each domain's fit may read, and the direction each signal may move each criterion, fixed before fitting.

The news signs (:data:`judgesdk.fused.fit.PRIOR_SIGNS`) made the SummEval fit hold on NewsRoom, where free
weights had learnt SummEval's systems. Dialogue and stories get the same treatment, written from what each
signal means and not from the data: a sign of +1 or -1 where the direction is known (a repeated trigram never
makes a story better; a response that takes up its grounding fact is more grounded), 0 where it is not (a
longer story may be richer or merely longer: its weight is fitted freely), and a signal with no entry is not
read at all for that criterion. Criteria a domain does not know get :data:`COMMON` only, with free signs.
"""

from __future__ import annotations

from collections.abc import Mapping

from judgesdk.fused.fit import GROUPS, PRIOR_SIGNS, SIGNED_CRITERIA

# The signals each domain computes, grouped as the inner folds may choose them.
DIALOGUE_LIKELIHOOD = (
    "cond_mean", "cond_low", "cond_low10", "cond_min", "cond_std", "uncond_mean", "pmi_mean", "pmi_low",
    "nofact_mean", "fact_pmi", "fact_pmi_low", "hist_pmi", "log_tokens",
)  # fmt: skip
DIALOGUE_TEXT = (
    "log_words", "repeat_3", "repeat_1", "adjacent_repeat", "words_per_sentence", "src_prec_1", "last_turn_prec_1",
    "ctx_prec_1", "ctx_recall_1", "ctx_prec_2", "question",
)  # fmt: skip
STORY_LIKELIHOOD = ("cond_mean", "cond_low", "cond_low10", "cond_min", "cond_std", "uncond_mean", "pmi_mean", "pmi_low", "log_tokens")
STORY_TEXT = (
    "log_words", "repeat_3", "repeat_1", "adjacent_repeat", "log_sentences", "words_per_sentence", "unfinished",
    "src_content_recall", "src_prec_1",
)  # fmt: skip

FEATURE_GROUPS: dict[str, dict[str, tuple[str, ...]]] = {
    "news": GROUPS,
    "dialogue": {"likelihood": DIALOGUE_LIKELIHOOD, "text": DIALOGUE_TEXT, "likelihood+text": DIALOGUE_LIKELIHOOD + DIALOGUE_TEXT},
    "story": {"likelihood": STORY_LIKELIHOOD, "text": STORY_TEXT, "likelihood+text": STORY_LIKELIHOOD + STORY_TEXT},
}

# Degenerate text reads worse on every criterion of every domain.
COMMON: dict[str, int] = {"repeat_3": -1, "adjacent_repeat": -1}
# Probable given what came before, with no token the model stumbles on: natural, coherent, readable.
_PROBABLE = {"cond_mean": 1, "cond_low": 1, "cond_low10": 1, "cond_min": 1, "cond_std": -1}
_FOLLOWS = {"hist_pmi": 1, "pmi_mean": 1, "pmi_low": 1}  # the conversation explains the response beyond its own fluency
_GROUNDED = {"ctx_prec_1": 1, "ctx_recall_1": 1, "ctx_prec_2": 1, "fact_pmi": 1, "fact_pmi_low": 1}  # taken from the fact
_DIALOGUE_FREE = {"log_words": 0, "question": 0, "uncond_mean": 0, "ctx_prec_1": 0, "ctx_recall_1": 0, "fact_pmi": 0}

DIALOGUE_SIGNS: dict[str, dict[str, int]] = {
    "naturalness": {**COMMON, **_PROBABLE, **_FOLLOWS, **_DIALOGUE_FREE},
    "coherence": {**COMMON, **_PROBABLE, **_FOLLOWS, "last_turn_prec_1": 1, **_DIALOGUE_FREE},
    "understandability": {**COMMON, **_PROBABLE, **_FOLLOWS, **_DIALOGUE_FREE},
    "engagingness": {**COMMON, **_FOLLOWS, **_DIALOGUE_FREE, "cond_mean": 0, "repeat_1": -1},
    "groundedness": {**COMMON, **_GROUNDED, "log_words": 0},
    "overall": {**COMMON, **_PROBABLE, **_FOLLOWS, **_DIALOGUE_FREE},
}

_PROMPTED = {"pmi_mean": 1, "pmi_low": 1, "src_content_recall": 1}  # the prompt explains the story: it is about it
# A story's own probability has no known direction: generated loops are very probable, and HANNA's humans
# rate them low (benchmarks/README.md); its length may be richness or padding.
_STORY_FREE = {"log_words": 0, "cond_mean": 0, "uncond_mean": 0, "cond_std": 0, "log_sentences": 0, "words_per_sentence": 0}
_STORY_BASE = {**COMMON, "repeat_1": -1, "unfinished": -1, **_STORY_FREE}

STORY_SIGNS: dict[str, dict[str, int]] = {
    "relevance": {**_STORY_BASE, **_PROMPTED},
    "coherence": {**_STORY_BASE},
    "empathy": {**_STORY_BASE},
    "surprise": {**_STORY_BASE},
    "engagement": {**_STORY_BASE},
    "complexity": {**_STORY_BASE},
}


# A reference is another summary of the same source: it tells what a summary should cover, not whether this one
# reads well. Criteria about how the text reads get no source+reference variant. On SummEval, where the
# references are the articles' bullet highlights, the variant still gained 0.017 for coherence under nested CV
# (0.536 against 0.519, fluency none); on NewsRoom, never fitted, it lost 0.093 for coherence (0.565 against
# 0.658; 0.027 without NewsRoom's reference-built `fragments` system): a SummEval quirk, not a signal. This
# rule was written after that NewsRoom figure, so NewsRoom's coherence check with a reference is no longer
# untouched data (benchmarks/README.md, "News with and without the reference").
READS_ALONE = frozenset({"coherence", "fluency"})


def reference_informs(criterion: str, aliases: Mapping[str, str] | None = None) -> bool:
    """Whether a criterion may read the reference (the source+reference variant): not for how the text reads."""
    return (aliases or {}).get(criterion, criterion) not in READS_ALONE


def signs_for(criterion: str, domain: str = "news", aliases: Mapping[str, str] | None = None) -> Mapping[str, int] | None:
    """The prior signs of a criterion in a domain; for news, None (a free fit) for a criterion it does not
    know, as a user's refit of a new criterion always had; elsewhere, :data:`COMMON` with free signs for the
    rest of the domain's signals."""
    name = (aliases or {}).get(criterion, criterion)
    if domain == "news":
        return PRIOR_SIGNS if name in SIGNED_CRITERIA else None
    table = DIALOGUE_SIGNS if domain == "dialogue" else STORY_SIGNS
    if name in table:
        return table[name]
    every = {f for group in FEATURE_GROUPS[domain].values() for f in group}
    return {f: COMMON.get(f, 0) for f in every}
