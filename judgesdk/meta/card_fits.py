"""Which fused fit produced a card's scores, and how many items lay outside every fit's domain.

A fused score means what its fit means: the news fit's 3.0 is a SummEval annotator's 3 on a summary, the
story fit's is a HANNA annotator's on a story. A card that mixes them, or whose items mostly fell back to
the prompted method because they lay outside every fit's domain, must say so; the rows say it per item
(``details.fit`` for a fused score, ``details.auto`` for what ``method = "auto"`` chose and why), and
:func:`fit_usage` counts them for the card.
"""

from __future__ import annotations

from collections.abc import Iterable

from pydantic import BaseModel, Field

from judgesdk.records import ResultRow


class FitUsage(BaseModel):
    """Per criterion: the rows scored by each fused fit, the rows the fallback judged, the rows outside the domain."""

    n_rows: int
    fits: dict[str, int] = Field(default_factory=dict)  # "domain/variant (fit label)" -> rows
    fallback: int = 0  # rows judged by auto's fallback (the prompted method)
    outside_domain: int = 0  # rows whose item lay outside every fit's domain (fallback, or fused asked for by name and flagged)
    fallback_reasons: dict[str, int] = Field(default_factory=dict)  # the first reason per fallback row -> rows


def fit_usage(rows: Iterable[ResultRow]) -> FitUsage | None:
    """Count the results rows by fit and fallback (their ``details``, which the row schema passes through
    untyped: checked here); None when no row came from the fused judge or ``auto`` (a card of another method
    says nothing about fits)."""
    usage = FitUsage(n_rows=0)
    seen = False
    for row in rows:
        usage.n_rows += 1
        details = raw if isinstance(raw := row.passed("details"), dict) else {}
        fit = raw if isinstance(raw := details.get("fit"), dict) else None
        chosen = raw if isinstance(raw := details.get("auto"), dict) else None
        if fit is not None:
            seen = True
            key = f"{fit.get('domain', 'news')}/{fit.get('variant', '?')} ({fit.get('label') or fit.get('signal_set', '')})"
            usage.fits[key] = usage.fits.get(key, 0) + 1
            usage.outside_domain += bool(details.get("outside_domain"))
        elif chosen is not None:
            seen = True
            usage.fallback += 1
            usage.outside_domain += bool(chosen.get("outside_domain"))
            why = str(chosen.get("why") or "")
            key = why.split(":")[0] if why else "unknown"
            usage.fallback_reasons[key] = usage.fallback_reasons.get(key, 0) + 1
    return usage if seen else None


def render(usage: FitUsage | None) -> list[str]:
    """The card section's Markdown lines."""
    if usage is None:
        return ["n/a: no row was scored by the fused judge or chosen by `auto`."]
    used = "; ".join(f"{key}: {n}" for key, n in sorted(usage.fits.items())) or "none"
    lines = [f"Of {usage.n_rows} rows: scored by fused fits {used}; judged by auto's fallback {usage.fallback}; "
             f"**outside every fit's domain {usage.outside_domain}**."]  # fmt: skip
    if usage.fallback_reasons:
        lines.append("Fallback reasons: " + "; ".join(f"{why} ({n})" for why, n in sorted(usage.fallback_reasons.items())) + ".")
    return lines
