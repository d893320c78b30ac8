"""A judge card's files: ``STEM.json`` (the :class:`~judgesdk.meta.card.Card` itself, every figure) and
``STEM.md`` (the same card for reading: a summary line per criterion, then each criterion's section).

Kept apart from :mod:`judgesdk.meta.card`, which computes what a card says, so that how a card looks can
change without touching how its figures are made.
"""

from __future__ import annotations

from pathlib import Path

from judgesdk.core import InputError
from judgesdk.meta import card_fits
from judgesdk.meta.card import Card, CriterionCard
from judgesdk.meta.correlation import LEVEL_DEFINITIONS
from judgesdk.meta.evaluation import LevelResult

__all__ = ["render_markdown", "write_card"]


def _f(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(lv: LevelResult) -> str:
    ci = lv.ci
    if ci is None:
        return "—"
    if ci.low is None or ci.high is None:
        return "undefined"
    return f"[{_f(ci.low)}, {_f(ci.high)}]"


def _agreement_table(section: CriterionCard) -> list[str]:
    confidence = next((lv.ci.confidence for lv in section.agreement if lv.ci is not None), None)
    ci_head = f"{confidence:.0%} CI ({section.bootstrap} document resamples, seed {section.seed})" if confidence else "CI"
    ceiling = {(c.level, c.method): c for c in section.ceiling.levels}
    lines = [
        f"| level | method | judge vs humans | {ci_head} | items | groups | skipped | human ceiling | judge on the ceiling's items |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for lv in section.agreement:
        c = lv.correlation
        skipped = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in c.skipped.items()) or (c.undefined_reason or "")
        ceil = ceiling.get((c.level, c.method))
        lines.append(
            f"| {c.level} | {c.method} | {_f(c.value)} | {_ci(lv)} | {c.n_items} | {c.n_groups} | {skipped or '0'} | "
            f"{_f(ceil.value) if ceil else '—'} | {_f(ceil.judge) if ceil else '—'} |"
        )
    return lines


def _section(section: CriterionCard) -> list[str]:
    out = [f"## {section.criterion}", ""]
    out.append(
        f"Results: `{section.results_file}` ({section.n_items} items joined to human scores; scale "
        f"{section.scale[0]:g}–{section.scale[-1]:g}, {section.scale_source}; convention {section.convention})."
    )
    out += ["", "### Agreement with humans", "", *_agreement_table(section), ""]
    for level in dict.fromkeys(lv.correlation.level for lv in section.agreement):
        out.append(f"- {level}: {LEVEL_DEFINITIONS[level]}")
    out += ["", f"Reproduce the agreement figures: `{section.meta_eval_command}`", ""]
    ceil = section.ceiling
    out += ["### Human ceiling (leave one annotator out)", ""]
    if ceil.available:
        out.append(
            f"Each of {ceil.n_annotators} annotators' scores against the mean of the other {ceil.n_annotators - 1}, at the "
            f"levels above, averaged over annotators (the 'human ceiling' column). Rests on {ceil.rests_on}. "
            "The judge's figure on the same items (vs the mean of all annotators) is the last column."
        )
        per = "; ".join(
            f"{c.level}/{c.method}: " + ", ".join(_f(v) for v in c.per_annotator) for c in ceil.levels if c.method == "spearman"
        )
        out += ["", f"Per annotator (Spearman): {per}."]
    else:
        out.append(f"Not available: {ceil.reason}.")
    p = section.parse
    out += ["", "### Parse and coverage", ""]
    status = ", ".join(f"{k} {v}" for k, v in p.status.items())
    out.append(
        f"{p.n_scored} of {p.n_selected} selected items scored ({_pct(p.share_scored)}); rows {p.n_rows}; statuses: {status}."
    )
    if p.n_with_distribution:
        out.append(
            f"Label distributions on {p.n_with_distribution} rows: mean probability mass on the labels (coverage) "
            f"{_f(p.mean_coverage)}, lowest {_f(p.min_coverage)}; status low_coverage on {_pct(p.share_low_coverage)} of rows."
        )
    else:
        out.append("No row carries a label distribution (coverage: n/a).")
    out += ["", "### Fused fit and domain", "", *card_fits.render(section.fits)]
    out += ["", "### Positional bias", ""]
    pos = section.positional
    if pos is not None:
        out.append(
            f"{pos.n_judgements} ordered verdicts: first position wins {_pct(pos.first_win_rate)}, second "
            f"{_pct(pos.second_win_rate)}, ties {_pct(pos.tie_rate)} (0.5 for an unbiased judge, 004 §3.5); of "
            f"{pos.n_swapped_pairs} pairs judged in both orders, the winner flips in {_pct(pos.flip_rate)} and the outcome "
            f"differs in {_pct(pos.inconsistency_rate)}."
            + (f" Mean probability given to the first position, P(first better) (004 eq. 3): {_f(section.positional_mean_p_first)}; "
               "the win ratios average both orders of each pair." if section.positional_mean_p_first is not None else "")
        )
    else:
        out.append(section.positional_note if section.positional_note.startswith("n/a") else f"n/a: {section.positional_note}")
    out += ["", "### Self-consistency across samples", ""]
    sc = section.self_consistency
    if sc.applicable and sc.variance is not None:
        v = sc.variance
        modal = f"; mean share of samples giving the modal answer {_f(sc.mean_modal_share)}" if sc.mean_modal_share is not None else ""
        out.append(
            f"From {sc.source} of {sc.n_items_sampled} items, {_f(sc.samples_per_item, 1)} samples each on average "
            f"({v.n_unparsed_repeats} of those samples unparsed): over the {v.n_items} items with at least two parsed samples, "
            f"mean standard deviation {_f(v.mean_sd)} (scale points), items whose samples differ {_pct(v.share_changed)}{modal}."
        )
    else:
        out.append(f"n/a: {sc.reason}")
    out += ["", "### Length bias", ""]
    lb = section.length
    if lb is not None:
        out.append(
            f"Spearman with output length (words) over {lb.n_items} items: judge {_f(lb.judge_vs_length)}, humans "
            f"{_f(lb.human_vs_length)}, excess (judge − humans) **{_f(lb.excess)}**. Over {lb.n_pairs} same-document pairs "
            f"of different length, the longer output scores higher for the judge in {_pct(lb.judge_prefers_longer)} and "
            f"for the humans in {_pct(lb.human_prefers_longer)} of decided pairs."
        )
    else:
        out.append("n/a: the human file gives no output texts for the joined items.")
    out += ["", "### Tokens and time per 1,000 items", ""]
    t = section.throughput
    if t is not None:
        out.append(
            f"From the {t.n_judgements} rows' usage and latency: {_n(t.input_tokens_per_1000)} input and "
            f"{_n(t.output_tokens_per_1000)} output tokens, {_n(t.seconds_per_1000)} s of judge latency per 1,000 items "
            f"(the sum of the rows' latencies: with several items in flight it counts their waiting too, so it is an upper "
            f"bound on the time); {_pct(t.share_cached)} of rows served from the cache (their usage as recorded)."
        )
    else:
        out.append("n/a: the rows carry neither usage nor latency.")
    if section.run_items_judged and section.run_wall_seconds is not None:
        per_1000 = section.run_wall_seconds / section.run_items_judged * 1000
        out.append(
            f"Wall clock, measured by the run that judged them: {section.run_items_judged} items judged in "
            f"{section.run_wall_seconds:,.1f} s ({_n(per_1000)} s per 1,000 items"
            + (f", concurrency {section.run_concurrency}" if section.run_concurrency else "") + ")."
        )
    return out + [""]


def _n(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def render_markdown(card: Card) -> str:
    """The card as Markdown (the JSON, :meth:`Card.model_dump_json`, holds every figure)."""
    j, d = card.judge, card.data
    lines = [f"# Judge card: {card.title}", ""]
    if card.created:
        lines += [f"Written {card.created} by `judgesdk card` (format {card.format}).", ""]
    lines += [
        "| judge | |",
        "| --- | --- |",
        f"| method asked | `{j.method}` |",
        f"| methods in the rows | {', '.join(f'`{m}` ({n})' for m, n in j.methods_in_rows.items()) or '—'} |",
        f"| provider / model | {', '.join(f'`{p}`' for p in j.providers) or '—'} |",
        f"| model identity | `{j.model_identity or 'not recorded'}`{f' ({j.identity_source})' if j.identity_source else ''} |",
        f"| judgesdk version | {j.sdk_version or '—'} |",
        f"| runtime | {', '.join(j.runtimes) or 'not recorded'} |",
        f"| templates | {', '.join(f'`{t}`' for t in j.templates) or 'none recorded (or none used)'} |",
        f"| options | {', '.join(f'{k}={v}' for k, v in j.options.items()) or '—'} |",
        "",
        "| labelled set | |",
        "| --- | --- |",
        f"| human file | `{d.human_file}` |",
        f"| subset | {d.subset} |",
        f"| items | {d.n_items} ({d.n_documents} documents × {d.n_systems} systems) |",
        f"| text the judge read | {d.text or '—'} |",
        "",
    ]
    lines += [f"- {note}" for note in card.notes]
    if card.notes:
        lines.append("")
    lines += _summary(card)
    for section in card.criteria:
        lines += _section(section)
    return "\n".join(lines).rstrip() + "\n"


def _summary(card: Card) -> list[str]:
    """One line per criterion: the sample-level Spearman with its CI beside the ceiling."""
    lines = [
        "| criterion | sample-level Spearman [CI] | summary-level Spearman | system-level Kendall | human ceiling (sample Spearman) | judge on the ceiling's items | scored | length excess | latency s / 1,000 |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for s in card.criteria:
        by = {(lv.correlation.level, lv.correlation.method): lv for lv in s.agreement}
        ceil = {(c.level, c.method): c for c in s.ceiling.levels}
        sample, pooled, system = by.get(("sample", "spearman")), by.get(("summary", "spearman")), by.get(("system", "kendall"))
        ceiling = ceil.get(("sample", "spearman"))
        lines.append(
            f"| {s.criterion} | {_f(sample.correlation.value) if sample else '—'} {_ci(sample) if sample else ''} | "
            f"{_f(pooled.correlation.value) if pooled else '—'} | {_f(system.correlation.value) if system else '—'} | "
            f"{_f(ceiling.value) if ceiling else 'n/a'} | {_f(ceiling.judge) if ceiling else '—'} | {_pct(s.parse.share_scored)} | {_f(s.length.excess) if s.length else '—'} | "
            f"{_n(s.throughput.seconds_per_1000) if s.throughput else '—'} |"
        )
    return lines + [""]


def write_card(card: Card, stem: str | Path) -> list[Path]:
    """Write ``card`` as ``<stem>.md`` and ``<stem>.json`` (a ``.md`` or ``.json`` suffix on ``stem`` is dropped);
    returns both paths. A ``stem`` that is a folder, whose folder does not exist, or that cannot be written is an
    :class:`~judgesdk.core.errors.InputError`."""
    base = Path(stem)
    if base.suffix in (".md", ".json"):
        base = base.with_suffix("")
    if base.exists() and base.is_dir():
        raise InputError(f"--card {stem} is a folder: give the path stem of the card files, e.g. {base / 'card'} (writes card.md and card.json)")
    if not base.parent.is_dir():
        raise InputError(f"--card {stem}: folder {base.parent} does not exist; create it or choose another path")
    md, js = base.with_name(base.name + ".md"), base.with_name(base.name + ".json")
    try:
        js.write_text(card.model_dump_json(indent=2) + "\n", encoding="utf-8")
        md.write_text(render_markdown(card), encoding="utf-8")
    except OSError as exc:
        raise InputError(f"--card {stem}: cannot write the card ({exc.strerror or exc})") from None
    return [md, js]
