"""Label distributions from the four kinds of evidence a model can give (pure functions).

* :func:`from_top_logprobs` — top-k token alternatives at the answer position (G-Eval / 002's Logprob).
* :func:`from_label_logprobs` — exact log-probabilities of each label's token sequences (local models).
* :func:`from_samples` — n sampled answers, each parsed (002's Approximation).
* :func:`from_answer` — one greedy answer, parsed (002's Direct).

A label can surface as several tokens (``5``, `` 5``, ``▁5``, ``Ġ5``, ``five``, ``(5``): they are merged
into one label before renormalising, and ``coverage`` keeps the mass the labels had beforehand, so a
judge that mostly wanted to say something else is visible rather than hidden by renormalisation.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from functools import lru_cache

from judgesdk.core import LabelDistribution, Scale
from judgesdk.provider import TokenLogprob

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
    "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_WORD_OF = {v: k for k, v in NUMBER_WORDS.items()}
# Word-piece markers of SentencePiece (▁) and byte-level BPE (Ġ space, Ċ newline), and wrapping punctuation.
_STRIP = " \t\n\r▁ĠĊ\"'`*_()[]{}<>:.,;!?#"


def normalize_token(token: str) -> str:
    """Canonical form of a token for label matching: markers, blanks and wrapping punctuation removed, lowercased."""
    return token.strip(_STRIP).lower()


def label_keys(label: str) -> frozenset[str]:
    """Every normalized surface form that counts as ``label`` (the label itself, and a number's word)."""
    key = normalize_token(label)
    keys = {key}
    if key.isdigit() and int(key) in _WORD_OF:
        keys.add(_WORD_OF[int(key)])
    if key in NUMBER_WORDS:
        keys.add(str(NUMBER_WORDS[key]))
    return frozenset(keys)


@lru_cache(maxsize=256)
def _labels_by_key(labels: tuple[str, ...]) -> dict[str, str]:
    """Surface form -> the first label it counts as; built once per scale, since every one of a response's
    top-20 alternatives is matched against every label."""
    found: dict[str, str] = {}
    for label in labels:
        for key in label_keys(label):
            found.setdefault(key, label)
    return found


def match_label(token: str, scale: Scale) -> str | None:
    """The scale label a token stands for, or None. Exact match after normalization only (``50`` is not ``5``)."""
    key = normalize_token(token)
    if not key:
        return None
    return _labels_by_key(scale.labels).get(key)


def surface_variants(label: str) -> list[str]:
    """Continuations to score exactly for a label: the label as is, and with a leading space."""
    return [label, f" {label}"]


def _label_mass(logprobs: dict[str, float], scale: Scale) -> dict[str, float]:
    """Probability per label, summed over every surface form (token text -> log-probability) of it."""
    mass: dict[str, float] = {}
    for text, logprob in logprobs.items():
        label = match_label(text, scale)
        if label is not None:
            mass[label] = mass.get(label, 0.0) + math.exp(logprob)
    return mass


def _renormalised(scale: Scale, mass: dict[str, float]) -> tuple[tuple[float, ...], float]:
    total = sum(mass.values())
    if total <= 0:
        raise ValueError("no probability mass on any label")
    return tuple(mass.get(label, 0.0) / total for label in scale.labels), total


def answer_position(tokens: Sequence[TokenLogprob], scale: Scale) -> int | None:
    """Index of the first generated token where a label is among the token or its top alternatives.

    Tokens before it are the judge clearing its throat (``Score:``, a newline, ``**``); the score is read
    where a label first becomes a candidate.
    """
    for index, token in enumerate(tokens):
        candidates = [token.token, *(alt.token for alt in token.top)]
        if any(match_label(c, scale) for c in candidates):
            return index
    return None


def from_top_logprobs(
    tokens: Sequence[TokenLogprob], scale: Scale, *, coverage_floor: float = 0.5
) -> LabelDistribution | None:
    """Distribution over ``scale`` from top-k alternatives at the answer position; None if no label appears.

    Each distinct token string counts once (the sampled token also appears among its alternatives).
    """
    position = answer_position(tokens, scale)
    if position is None:
        return None
    token = tokens[position]
    alternatives = {alt.token: alt.logprob for alt in token.top}
    alternatives.setdefault(token.token, token.logprob)
    probs, coverage = _renormalised(scale, _label_mass(alternatives, scale))
    return LabelDistribution(
        scale=scale, probs=probs, method="logprobs", coverage=min(coverage, 1.0), low_coverage=coverage < coverage_floor
    )


def from_label_logprobs(
    label_logprobs: dict[str, float], scale: Scale, *, coverage_floor: float = 0.5
) -> LabelDistribution:
    """Distribution from exact log P(continuation | prompt) of each label's surface variants.

    ``label_logprobs`` maps each scored continuation (see :func:`surface_variants`) to its log-probability;
    variants of one label are summed. Coverage is exact: the mass of all variants together.
    """
    probs, coverage = _renormalised(scale, _label_mass(label_logprobs, scale))
    return LabelDistribution(
        scale=scale, probs=probs, method="exact", coverage=min(coverage, 1.0), low_coverage=coverage < coverage_floor
    )


def from_samples(labels: Iterable[str | None], scale: Scale) -> LabelDistribution | None:
    """Empirical distribution of parsed samples (None = unparseable); None when nothing parsed.

    ``stderr`` is the standard error of the expected value: sample sd / sqrt(parsed count).
    """
    all_labels = list(labels)
    parsed = [label for label in all_labels if label is not None]
    if not parsed:
        return None
    counts = {label: parsed.count(label) for label in scale.labels}
    probs = tuple(counts[label] / len(parsed) for label in scale.labels)
    values = [scale.value_of(label) for label in parsed]
    mean = sum(values) / len(values)
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else float("nan")
    return LabelDistribution(
        scale=scale,
        probs=probs,
        method="sampling",
        coverage=len(parsed) / len(all_labels),
        n_samples=len(all_labels),
        n_unparsed=len(all_labels) - len(parsed),
        stderr=sd / math.sqrt(len(values)) if len(values) > 1 else None,
    )


def from_answer(label: str | None, scale: Scale) -> LabelDistribution | None:
    """One-hot distribution of a single parsed answer; None when it did not parse."""
    if label is None:
        return None
    return LabelDistribution(
        scale=scale, probs=tuple(1.0 if lab == label else 0.0 for lab in scale.labels), method="parsed", coverage=1.0
    )

