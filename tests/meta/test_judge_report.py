"""Judge report: length bias, variance across repeats, time and cost per 1,000, plots."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from conftest import need

from judgesdk.core.types import JudgeResult
from judgesdk.meta import (
    CostModel,
    MissingDependencyError,
    PairwiseJudgement,
    ScoredItem,
    judge_report,
    length_bias,
    repeat_variance,
    throughput,
    write_report,
)
from judgesdk.provider.protocol import Usage


def items_with_lengths() -> tuple[list[ScoredItem], dict[tuple[str, str], float]]:
    lengths = {}
    items = []
    for d in range(4):
        for s, (n_words, human) in enumerate([(10, 3.0), (30, 4.0), (20, 2.0)]):
            key = (f"d{d}", f"s{s}")
            lengths[key] = n_words + d
            items.append(ScoredItem(doc_id=key[0], system_id=key[1], human=human + 0.1 * d, prediction=float(n_words + d)))
    return items, lengths


def test_length_bias_of_a_judge_that_follows_length() -> None:
    items, lengths = items_with_lengths()
    lb = length_bias(items, lengths)
    assert lb.judge_vs_length == pytest.approx(1.0)
    assert lb.judge_prefers_longer == 1.0
    # humans: per document 10 words -> 3, 30 -> 4, 20 -> 2: longer wins 2 of 3 pairs
    assert lb.human_prefers_longer == pytest.approx(2 / 3)
    assert lb.n_pairs == 12 and lb.excess == pytest.approx(lb.judge_vs_length - lb.human_vs_length)


def test_repeat_variance() -> None:
    rv = repeat_variance({"a": [1.0, 1.0, 1.0], "b": [1.0, 3.0], "c": [2.0, None]})
    assert rv.n_items == 2
    assert rv.mean_sd == pytest.approx(math.sqrt(2.0) / 2)
    assert rv.share_changed == 0.5 and rv.n_unparsed_repeats == 1


def test_time_and_cost_per_thousand_judgements() -> None:
    results = [
        JudgeResult(score=3.0, status="ok", criterion="c", method="m", latency_s=2.0, usage=Usage(input_tokens=100, output_tokens=10)),
        JudgeResult(score=None, status="unparsed", criterion="c", method="m", latency_s=4.0, usage=Usage(input_tokens=100, output_tokens=10), cached=True),
    ]
    t = throughput(results, CostModel(usd_per_million_input=1.0, usd_per_million_output=2.0))
    assert t.seconds_per_1000 == pytest.approx(3000.0)
    assert t.usd_per_1000 == pytest.approx((100 * 1 + 10 * 2) / 1e6 * 1000)
    assert t.share_ok == 0.5 and t.share_cached == 0.5
    assert throughput(results).usd_per_1000 is None


def report_inputs():
    items, lengths = items_with_lengths()
    items = [it.model_copy(update={"prediction": it.human + (0.5 if it.system_id == "s0" else 0.0)}) for it in items]
    items[0] = items[0].model_copy(update={"prediction": None})
    pairwise = [PairwiseJudgement(doc_id="d0", first="s0", second="s1", winner="first")]
    return items, lengths, pairwise


def test_judge_report_sections() -> None:
    items, lengths, pairwise = report_inputs()
    rep = judge_report(items, lengths=lengths, pairwise=pairwise, repeats={"x": [1.0, 2.0]})
    assert rep.n_items == 12 and rep.n_parsed == 11 and rep.share_parsed == pytest.approx(11 / 12)
    assert len(rep.agreement) == 9 and len(rep.per_system) == 3 and len(rep.meta) == 3
    assert rep.positional.first_win_rate == 1.0
    assert rep.length is not None and rep.repeats.n_items == 1 and rep.throughput is None


def test_write_report_files(tmp_path: Path) -> None:
    need("matplotlib")
    items, lengths, _ = report_inputs()
    files = write_report(judge_report(items, lengths=lengths), tmp_path / "out")
    names = {f.name for f in files}
    assert {"system_spread.png", "quality_vs_alignment_kendall.png", "report.html", "report.json"} <= names
    assert all(f.stat().st_size > 0 for f in files)
    assert "Per-system correlations" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")


def test_missing_matplotlib_gives_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    items, lengths, _ = report_inputs()
    with pytest.raises(MissingDependencyError, match="pip install matplotlib"):
        write_report(judge_report(items), tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_report_cost_prices_prompt_cache_reads_and_writes_like_the_budget() -> None:
    """One price arithmetic (judgesdk.provider.prices.Price): an Anthropic cache write costs 1.25x input, a read the cached price."""
    usage = Usage(input_tokens=1000, output_tokens=0, cached_input_tokens=400, cache_write_input_tokens=500)
    result = JudgeResult(score=3.0, status="ok", criterion="c", method="m", usage=usage, provider="anthropic", model="claude")
    prices = CostModel(usd_per_million_input=1.0, usd_per_million_cached_input=0.1)
    expected = (100 * 1.0 + 400 * 0.1 + 500 * 1.25) / 1e6
    assert throughput([result], prices).usd_per_1000 == pytest.approx(expected * 1000)
