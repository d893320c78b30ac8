"""Benchmark text as users write it: untokenized, with names cased as in the source.

SummEval's outputs (as G-Eval and UniEval evaluated them) are PTB-tokenized and lowercased ("paul merson
has restarted his row ... his team 's 0-0 draw"), NewsRoom's articles carry HTML. A language model's
likelihood moves with such artifacts, and users' text has none, so signals fitted on the benchmark
are computed on this view: the original article where the data keeps it (``source_untokenized``), HTML
unescaped and stripped, PTB tokens joined (NLTK's Treebank detokenizer), and a lowercased word recased
when the source only ever writes it capitalised. TopicalChat's dialogue history (tokenized, no
untokenized copy) is joined turn by turn, and its grounding fact too. Human scores and ids are unchanged.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from judgesdk.meta.datasets import HumanRecord

_TAG = re.compile(r"<[^>]+>")
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]*")
_SPACES = re.compile(r"\s+")


def detokenize(text: str) -> str:
    """Join PTB tokens ("team 's" -> "team's", "( centre )" -> "(centre)", "do n't" -> "don't")."""
    from nltk.tokenize.treebank import TreebankWordDetokenizer  # optional: the 'local' extra

    return TreebankWordDetokenizer().detokenize(text.split())


def strip_html(text: str) -> str:
    return _SPACES.sub(" ", _TAG.sub(" ", html.unescape(text))).strip()


def source_casing(source: str) -> dict[str, str]:
    """Lowercase word -> its usual spelling in the source, for words the source never writes in lowercase."""
    forms: dict[str, Counter[str]] = {}
    for word in _WORD.findall(source):
        forms.setdefault(word.lower(), Counter())[word] += 1
    return {
        low: counts.most_common(1)[0][0]
        for low, counts in forms.items()
        if low not in counts and counts.most_common(1)[0][0] != low
    }


def recase(text: str, source: str) -> str:
    casing = source_casing(source)
    return _WORD.sub(lambda m: casing.get(m.group(0), m.group(0)) if m.group(0).islower() else m.group(0), text)


# Data sets whose source is PTB-tokenized with no untokenized copy: joined line by line (a dialogue's turns)
TOKENIZED_SOURCES = frozenset({"topicalchat"})


def natural(record: HumanRecord) -> HumanRecord:
    """The record with source, output, reference and context in natural text (see the module docstring)."""
    extra = record.model_extra or {}
    source = extra.get("source_untokenized") or record.source
    if source and record.dataset in TOKENIZED_SOURCES and not extra.get("source_untokenized"):
        source = "\n".join(detokenize(strip_html(line)) for line in source.splitlines() if line.strip())
    else:
        source = strip_html(source) if source else source
    fix = lambda text: recase(detokenize(strip_html(text)), source or "") if text else text  # noqa: E731
    update = {"source": source, "output": fix(record.output), "reference": fix(record.reference)}
    if record.context:
        update["context"] = detokenize(strip_html(record.context))
    return record.model_copy(update=update)
