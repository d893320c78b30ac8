"""Cheap, model-free evidence about an output: overlap with its source and reference, novelty, length, repetition.

Words are lowercased ``\\w+`` runs, so PTB-tokenized text ("team 's", "do n't") and ordinary text ("team's",
"don't") give the same words: these features do not move when a benchmark's tokenization differs from a
user's. Every function is pure and returns a float; an empty side gives 0, never NaN.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
LEAD_SENTENCES = 3
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[A-Z][a-z]+")
# Function words that repeat in any article; what is left after removing them and rare words is what the
# article is about (a source-only proxy for "the important content" of SummEval's relevance).
STOPWORDS = frozenset(
    "the a an and or but of to in on at for with by from as is are was were be been being has have had do does did "
    "not no it its this that these those he she they them his her their him we you i our your who whom which what "
    "when where why how will would can could should may might must said says also after before over into about than "
    "then there here more most some such only just very up out one two new".split()
)


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def precision(output: Sequence[str], source: Sequence[str], n: int) -> float:
    """Share of the output's n-grams (with repeats) that occur in the source: 1 - novel n-gram share."""
    grams = ngrams(output, n)
    if not grams:
        return 0.0
    seen = set(ngrams(source, n))
    return sum(g in seen for g in grams) / len(grams)


def f1(output: Sequence[str], reference: Sequence[str], n: int) -> float:
    """ROUGE-N F1 with clipped counts (no stemming, no stopword removal)."""
    out, ref = Counter(ngrams(output, n)), Counter(ngrams(reference, n))
    overlap = sum((out & ref).values())
    if not overlap:
        return 0.0
    p, r = overlap / sum(out.values()), overlap / sum(ref.values())
    return 2 * p * r / (p + r)


def overlap(output: Sequence[str], reference: Sequence[str], n: int) -> tuple[float, float]:
    """ROUGE-N precision and recall with clipped counts: the share of the output's n-grams that the reference
    has, and the share of the reference's that the output has."""
    out, ref = Counter(ngrams(output, n)), Counter(ngrams(reference, n))
    shared = sum((out & ref).values())
    total_out, total_ref = sum(out.values()), sum(ref.values())
    return (shared / total_out if total_out else 0.0, shared / total_ref if total_ref else 0.0)


def content(tokens: Sequence[str]) -> list[str]:
    """The words that carry content: no function words, none of one or two letters."""
    return [w for w in tokens if w not in STOPWORDS and len(w) > 2]


def share_of(part: Sequence[str], whole: Sequence[str]) -> float:
    """Share of ``part``'s words (with repeats) that occur in ``whole`` (0 for an empty part)."""
    seen = set(whole)
    return sum(w in seen for w in part) / len(part) if part else 0.0


def recall(output: Sequence[str], target: Sequence[str], n: int) -> float:
    """Share of ``target``'s distinct n-grams that the output contains."""
    wanted = set(ngrams(target, n))
    if not wanted:
        return 0.0
    return len(wanted & set(ngrams(output, n))) / len(wanted)


def repetition(output: Sequence[str], n: int = 3) -> float:
    """Share of the output's n-grams that repeat an earlier one (0 for no repeats)."""
    grams = ngrams(output, n)
    if not grams:
        return 0.0
    return 1.0 - len(set(grams)) / len(grams)


def key_words(source: Sequence[str]) -> set[str]:
    """Words the source repeats (at least twice), minus function words and one- or two-letter words."""
    counts = Counter(source)
    return {w for w, n in counts.items() if n >= 2 and len(w) > 2 and w not in STOPWORDS}


def early_key_words(source: Sequence[str]) -> set[str]:
    """Key words that already occur in the source's first third (news puts what matters first)."""
    head = set(source[: len(source) // 3])
    return {w for w in key_words(source) if w in head}


def word_repeats(output: Sequence[str]) -> float:
    """Share of the output's content words that repeat an earlier one ("the club said the club ...")."""
    counts = Counter(w for w in output if w not in STOPWORDS and len(w) > 2)
    total = sum(counts.values())
    return sum(n - 1 for n in counts.values()) / total if total else 0.0


def names(text: str) -> set[str]:
    """Lowercased capitalised words that do not start a sentence, written at least twice: the people,
    places and organisations an article is about."""
    counts = Counter(m.group(0).lower() for m in _NAME.finditer(text))
    return {w for w, n in counts.items() if n >= 2 and w not in STOPWORDS}


def share_in(wanted: set[str], output: Sequence[str]) -> float:
    return len(wanted & set(output)) / len(wanted) if wanted else 0.0


def lead(text: str, sentences: int = LEAD_SENTENCES) -> str:
    return " ".join(_SENTENCE_END.split(text.strip())[:sentences])


def text_features(output: str, source: str | None, reference: str | None, *, context: str | None = None) -> dict[str, float]:
    """The model-free features of one output (source features only with a source, reference ones only
    with a reference, grounding-fact ones only with a context)."""
    out = words(output)
    sentences = [s for s in _SENTENCE_END.split(output.strip()) if s.strip()]
    features = {
        "log_words": math.log1p(len(out)),
        "repeat_3": repetition(out, 3),
        "log_sentences": math.log1p(len(sentences)),
        "words_per_sentence": len(out) / max(1, len(sentences)),
        "unfinished": float(not output.rstrip().endswith((".", "!", "?", '"', "'", ")"))),
        "adjacent_repeat": sum(a == b for a, b in zip(out, out[1:])) / max(1, len(out) - 1),
        "repeat_1": word_repeats(out),
    }
    if source is not None:
        src = words(source)
        features.update(
            src_prec_1=precision(out, src, 1),
            src_prec_2=precision(out, src, 2),
            src_prec_4=precision(out, src, 4),
            lead_recall_2=recall(out, words(lead(source)), 2),
            key_recall=share_in(key_words(src), out),
            key_early=share_in(early_key_words(src), out),
            name_recall=share_in(names(source), out),
            len_ratio=math.log1p(len(out)) - math.log1p(len(src)),
            # the share of the source's content words the output takes up: a story's use of its prompt
            src_content_recall=share_of(sorted(set(content(src))), out),
        )
        turns = [line for line in source.splitlines() if line.strip()]
        if context is not None and turns:  # dialogue: does the response take up the last turn
            features["last_turn_prec_1"] = share_of(content(out), words(turns[-1]))
    if context is not None:  # a grounding fact: how much of the response comes from it, how much of it is used
        fact = words(context)
        features.update(
            ctx_prec_1=share_of(content(out), fact),
            ctx_recall_1=share_of(sorted(set(content(fact))), out),
            ctx_prec_2=precision(out, fact, 2),
            question=float("?" in output),
        )
    if reference is not None:
        ref = words(reference)
        features.update(ref_f1_1=f1(out, ref, 1), ref_f1_2=f1(out, ref, 2))
        (p1, r1), (p2, r2) = overlap(out, ref, 1), overlap(out, ref, 2)
        features.update(ref_prec_1=p1, ref_recall_1=r1, ref_prec_2=p2, ref_recall_2=r2)
        # what the reference's writer kept: its content words, and the source's key words it repeats
        features["ref_content_recall"] = share_of(sorted(set(content(ref))), out)
        if source is not None:
            features["ref_key_recall"] = share_in(key_words(words(source)) & set(ref), out)
    return features
