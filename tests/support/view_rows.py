"""Synthetic runs for the viewer's tests and benchmarks/view_load.py: results rows written by the SDK's own row
writer (:func:`judgesdk.records.row_for` on real :class:`JudgeResult` objects, so they are the format
``judgesdk score -o`` writes), and the items file they were judged from. Seeded, so a run is reproducible.

Each document has one source shared by its systems' outputs (as SummEval has), so a page that stores a source
once per document can be checked against one that stores it per item. Methods cycle through ``geval`` (a
logprob label distribution, some with low coverage), ``fused/source`` (an interval, signals and their
contributions, some outside the fit), ``jury`` (three judges' parts) and a few ``unparsed`` rows.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from judgesdk.core.provenance import Provenance
from judgesdk.core.types import JudgeResult, LabelDistribution, Scale, Usage
from judgesdk.records import Ask, row_for

SCALE = Scale.likert(1, 5)
SHA = "9c1f6a0b7e0e4f3a8d2c5b1e6f7a8b9c0d1e2f3a4b5c6d7e8f90a1b2c3d4e5f6"
WORDS = ("council", "park", "river", "budget", "vote", "station", "garden", "mayor", "housing", "plan", "cycle", "path", "school", "museum")
PLANTED = '<script>window.__judgesdk_pwned = 1</script>'  # must never run


def _sentence(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)).capitalize() + "."


def _provenance(method: str, sdk: str, sha: str) -> Provenance:
    return Provenance(
        sdk=sdk, provider="local", model="gemma-3-270m", method=method, options="0f3e2a1b9c8d",
        served={"model": "gemma-3-270m-q4_k_m", "model_sha256": sha, "runtime": "llama-cpp-python 0.3.35"},
        templates=("geval@1#a1b2c3d4",) if method.startswith("geval") else (),
    )  # fmt: skip


def _distribution(rng: random.Random, centre: float, coverage: float) -> LabelDistribution:
    weights = [math.exp(-((v - centre) ** 2) / (0.3 + rng.random())) for v in SCALE.values]
    total = sum(weights)
    return LabelDistribution(scale=SCALE, probs=tuple(w / total for w in weights), method="logprobs", coverage=coverage, low_coverage=coverage < 0.5)


def result(rng: random.Random, index: int, criterion: str, *, shift: float = 0.0, sdk: str = "0.1.0", sha: str = SHA, item_id: str = "") -> JudgeResult:
    """One judgement: the method cycles with ``index`` (module docstring)."""
    centre = min(5.0, max(1.0, rng.gauss(3.4, 0.9) + shift))
    usage = Usage(input_tokens=rng.randint(300, 900), output_tokens=rng.randint(1, 40), calls=1)
    kind = index % 10
    if kind == 9:  # unparsed: a final verdict without a score
        return JudgeResult(score=None, status="unparsed", criterion=criterion, method="geval", raw=["I cannot rate this."], provider="local", model="gemma-3-270m",
                           notes=["the answer held no label of the scale"], usage=usage, latency_s=0.2, provenance=_provenance("geval", sdk, sha), item_id=item_id)  # fmt: skip
    if kind in (6, 7):  # fused: an interval, signals and contributions
        low, high = centre - 0.4 - rng.random() * 0.6, centre + 0.4 + rng.random() * 0.6
        outside = kind == 7 and rng.random() < 0.3
        contributions = {"yes_relevant": round(rng.uniform(-0.8, 0.8), 4), "src_pmi": round(rng.uniform(-0.5, 0.5), 4), "length": round(rng.uniform(-0.3, 0.3), 4)}
        return JudgeResult(
            score=round(centre, 4), status="ok", criterion=criterion, method="fused/source", provider="local", model="gemma-3-270m",
            method_reason="signals of gemma-3-270m mapped to the 1-5 human scale by a model fitted on summeval",
            usage=usage, latency_s=round(rng.uniform(0.1, 1.5), 3), provenance=_provenance("fused", sdk, sha), item_id=item_id,
            notes=[f"90% predictive interval {low:.2f}-{high:.2f}"] + (["signals outside the range the fit has seen (src_pmi) move the score by +0.71: needs review"] if outside else []),
            details={"interval": [round(low, 4), round(high, 4)], "interval_level": 0.9, "outside_fit": outside,
                     "outside_fitted_range": ["src_pmi"] if outside else [], "extrapolation": 0.71 if outside else 0.0,
                     "signals": {"yes_relevant": round(rng.random(), 4), "src_pmi": round(rng.gauss(0, 1), 4), "length": rng.randint(10, 80)},
                     "contributions": contributions, "calibration": "fused core sha256:0123456789abcdef"},
        )  # fmt: skip
    if kind == 8:  # a jury of three judges
        parts = {}
        for name, offset in (("small", -0.3), ("medium", 0.0), ("large", 0.4 + (1.5 if rng.random() < 0.2 else 0.0))):
            s = round(min(5.0, max(1.0, centre + offset + rng.gauss(0, 0.2))), 4)
            parts[name] = JudgeResult(score=s, status="ok", criterion=criterion, method="geval", provider="local", model=name, usage=usage,
                                      provenance=_provenance("geval", sdk, sha))  # fmt: skip
        scores = {n: p.score for n, p in parts.items()}
        spread = max(scores.values()) - min(scores.values())  # type: ignore[type-var,operator]
        return JudgeResult(
            score=round(sum(scores.values()) / 3, 4), status="ok", criterion=criterion, method="jury", provider="jury", model="small+medium+large",  # type: ignore[arg-type]
            method_reason="jury of 3 judges (small, medium, large): the mean of their scores", usage=usage, latency_s=0.9, item_id=item_id,
            details={"aggregate": "mean", "scores": scores, "judges_ok": 3, "judges": 3, "min_judges": 2, "spread": spread, "threshold": 1.0, "flagged": spread > 1.0},
            parts=parts, notes=[f"{n}: {s}" for n, s in scores.items()],
        )  # fmt: skip
    coverage = 0.3 if kind == 5 else round(rng.uniform(0.8, 0.999), 4)
    dist = _distribution(rng, centre, coverage)
    return JudgeResult(
        score=round(dist.expected, 4), status="low_coverage" if coverage < 0.5 else "ok", criterion=criterion, method="geval",
        method_reason="the provider returns top-k logprobs", distribution=dist, raw=[str(round(centre))], provider="local",
        model="gemma-3-270m", usage=usage, latency_s=round(rng.uniform(0.05, 0.8), 3), provenance=_provenance("geval", sdk, sha), item_id=item_id,
        notes=["probability mass on the labels was low: use with care"] if coverage < 0.5 else [],
    )  # fmt: skip


def items(n_docs: int, n_systems: int, seed: int = 0, hostile: Sequence[str] = ()) -> list[dict[str, Any]]:
    """The items file: ``doc_id``, ``system_id``, ``id`` (``doc:sys``), a source per document, an output per
    system; ``hostile`` texts are put into the first outputs (and one source, and one id)."""
    rng = random.Random(seed)
    out = []
    for d in range(n_docs):
        source = " ".join(_sentence(rng, rng.randint(12, 24)) for _ in range(rng.randint(8, 14)))
        for s in range(n_systems):
            out.append({"id": f"d{d}:s{s}", "doc_id": f"d{d}", "system_id": f"s{s}", "source": source,
                        "output": " ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(rng.randint(2, 4)))})  # fmt: skip
    for k, text in enumerate(hostile):
        if k < len(out):
            out[k]["output"] = f"{text} {out[k]['output']}"
    if hostile and out:
        out[-1]["source"] = hostile[0] + " " + out[-1]["source"]
    return out


def rows(item_list: Sequence[dict[str, Any]], criteria: Sequence[str] = ("coherence",), seed: int = 0, **options: Any) -> Iterator[dict[str, Any]]:
    """One results row per item and criterion, as ``judgesdk score -o`` writes it."""
    rng = random.Random(seed + 1)
    for c in criteria:
        ask = Ask(c, "auto", "cfg0123456")
        for index, item in enumerate(item_list):
            found = result(rng, index, c, item_id=item["id"], **options)
            yield row_for(found, item["id"], ask, {"doc_id": item["doc_id"], "system_id": item["system_id"]})


def write_jsonl(path: Path, lines: Iterator[dict[str, Any]] | Sequence[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(json.dumps(line, ensure_ascii=False) + "\n")
    return path


def embedded(page: str) -> dict[str, Any]:
    """The data a page written by ``judgesdk view`` embeds (its JSON data block, details inflated)."""
    from judgesdk.view.html import unpacked

    found = re.search(r'<script type="application/json" id="judgesdk-data">(.*?)</script>', page, re.S)
    assert found is not None, "no data block in the page"
    return unpacked(json.loads(found.group(1)))
