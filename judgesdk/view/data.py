"""What the page shows, computed once here: one JSON-ready dict (:func:`page_data`) that the page's script only
lays out, so every figure on the page comes from the SDK's own code and can be tested without a browser.

The items are columns (one list per field, one entry per ``(id, criterion)``), so 100,000 rows stay a few
compact arrays the script filters and sorts in place. Repeated strings (criteria, statuses, methods, method
reasons) are stored once in ``strings``; texts (outputs, sources, references: a source is shared by all its
summaries) once in ``texts``; provenance records once in ``provenance``. A row's remaining fields go into its
``d`` (detail) entry as the file holds them.

Per item, the flags are:

* ``needs_review``: :func:`judgesdk.meta.reliability.review_flags` under the default
  :class:`~judgesdk.meta.reliability.ReviewPolicy` (the signals the ``review`` gate reads: label coverage,
  entropy, sample spread, a fused score outside its fit), with its reasons;
* ``low_coverage``: status ``low_coverage`` or a distribution flagged so;
* ``outside_fit``: a fused score whose signals lie beyond its fit (``details.outside_fit``);
* ``jury_disagreement``: a jury whose judges' scores spread beyond its threshold (``details.flagged``);
* ``gate_failed``: named by a failed gate of the gate report (review, completeness, pass rate);
* ``changed``: with a second run, moved beyond the tolerance or changed status (:func:`judgesdk.meta.diff.diff_rows`);
* ``unscored``: no score (unparsed or error).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import ValidationError

from judgesdk.core import InputError, Scale
from judgesdk.jury import agreement
from judgesdk.meta import ItemSignals, diff_rows, review_flags
from judgesdk.provider import Usage, price_for
from judgesdk.records import to_result
from judgesdk.view.load import Key, Run

FORMAT = "judgesdk.view/1"
FLAGS = ("needs_review", "low_coverage", "outside_fit", "jury_disagreement", "gate_failed", "changed", "unscored")
_BIT = {name: 1 << i for i, name in enumerate(FLAGS)}
COLUMNS = ("id", "criterion", "score", "status", "method")  # the row fields the table holds as columns
TEXT_FIELDS = ("output", "source", "reference", "context")
GATE_ITEM_LISTS = ("flagged", "missing", "unscored", "below")  # the gate details that name items
MAX_BINS = 20
_DEFAULT_SCALE = Scale.likert(1, 5)


class _Table:
    """Values stored once, referred to by index."""

    def __init__(self) -> None:
        self.values: list[Any] = []
        self._index: dict[Any, int] = {}

    def add(self, value: Any, key: Any = None) -> int:
        key = value if key is None else key
        found = self._index.get(key)
        if found is None:
            found = self._index[key] = len(self.values)
            self.values.append(value)
        return found


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _interval(details: Mapping[str, Any]) -> tuple[float | None, float | None]:
    found = details.get("interval")
    if isinstance(found, (list, tuple)) and len(found) == 2:
        low, high = _finite(found[0]), _finite(found[1])
        if low is not None and high is not None:
            return low, high
    return None, None


# -- per item -------------------------------------------------------------------------------------------------


def _review(row: Mapping[str, Any], criterion: str) -> tuple[bool, list[str], float | None, str | None]:
    """(needs review, reasons, risk, why it could not be judged) of one row, as the review gate reads it."""
    if row.get("score") is None:
        return False, [], None, None
    details = row.get("details")
    details = details if isinstance(details, Mapping) else {}
    # only what the signals read (a jury's parts, raw answers and provenance would cost validation and change nothing)
    record = {k: row[k] for k in ("id", "score", "status", "method", "criterion", "distribution") if k in row}
    record["details"] = {k: details[k] for k in ("outside_fit", "outside_fitted_range") if k in details}
    try:
        result = to_result(record, _DEFAULT_SCALE, criterion)
    except (ValidationError, InputError, ValueError, TypeError) as exc:  # a row the gate could not read: shown, with why, never costing the others
        return False, [], None, f"not read as a result ({type(exc).__name__}: {str(exc).splitlines()[0][:200]})"
    flag = review_flags([ItemSignals.from_result(result.item_id or "", result)])[0]
    return flag.needs_review, list(flag.reasons), flag.risk, None


def _flags(row: Mapping[str, Any], score: float | None, review: bool) -> int:
    details = row.get("details")
    details = details if isinstance(details, Mapping) else {}
    dist = row.get("distribution")
    dist = dist if isinstance(dist, Mapping) else {}
    bits = 0
    if review:
        bits |= _BIT["needs_review"]
    if row.get("status") == "low_coverage" or dist.get("low_coverage"):
        bits |= _BIT["low_coverage"]
    if details.get("outside_fit"):
        bits |= _BIT["outside_fit"]
    if row.get("method") == "jury" and details.get("flagged"):
        bits |= _BIT["jury_disagreement"]
    if score is None:
        bits |= _BIT["unscored"]
    return bits


def _provenance_ref(value: Any, table: _Table) -> int | None:
    if not isinstance(value, Mapping):
        return None
    return table.add(value, json.dumps(value, sort_keys=True, default=str))


_NOT_DETAIL = frozenset((*COLUMNS, *TEXT_FIELDS, "provenance", "method_reason", "item_id"))


def _detail(row: Mapping[str, Any], provenance: _Table, strings: _Table) -> dict[str, Any]:
    """A row's fields other than the table's columns, texts and provenance (which are stored once); fields the
    writer leaves null, empty or false are left out (the page reads a missing field as that)."""
    d = {k: v for k, v in row.items() if k not in _NOT_DETAIL and v is not None and v != [] and v != {} and v is not False}
    ref = _provenance_ref(row.get("provenance"), provenance)
    if ref is not None:
        d["provenance_ref"] = ref
    if row.get("method_reason"):
        d["method_reason_ref"] = strings.add(str(row["method_reason"]))
    parts = row.get("parts")
    if isinstance(parts, Mapping):
        kept = {}
        for name, part in parts.items():
            if isinstance(part, Mapping):
                part = {k: v for k, v in part.items() if k not in ("provenance", "raw") and v is not None and v != [] and v != {} and v is not False}
                pref = _provenance_ref(parts[name].get("provenance"), provenance)
                if pref is not None:
                    part["provenance_ref"] = pref
            kept[name] = part
        d["parts"] = kept
    return d


# -- the run's header ---------------------------------------------------------------------------------------------


def _usage(rows: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Tokens, calls, time and cost of a run's rows (cost: :func:`judgesdk.provider.prices.price_for` per
    provider/model on the tokens billed, that is of rows not served from the cache; unknown, with why, where
    there is no price)."""
    fields = ("input_tokens", "output_tokens", "cached_input_tokens", "cache_write_input_tokens", "calls")
    total = dict.fromkeys(fields, 0)
    billed: dict[tuple[str, str], dict[str, int]] = {}
    latency: list[float] = []
    cached = n_rows = 0
    for row in rows:
        n_rows += 1
        counts = _counts(row.get("usage"), fields)
        for f in fields:
            total[f] += counts[f]
        seconds = _finite(row.get("latency_s"))
        if seconds is not None:
            latency.append(seconds)
        if row.get("cached"):
            cached += 1
            continue
        parts = row.get("parts") if isinstance(row.get("parts"), Mapping) else None
        # a jury's row sums its judges' usage: each judge is billed at its own provider's price
        billers = [(p, _counts(p.get("usage"), fields)) for p in parts.values() if isinstance(p, Mapping) and not p.get("cached")] if parts else [(row, counts)]
        for source, used in billers:
            group = billed.setdefault((str(source.get("provider") or ""), str(source.get("model") or "")), dict.fromkeys(fields, 0))
            for f in fields:
                group[f] += used[f]
    usd: float | None = 0.0
    notes: list[str] = []
    groups = []
    for (kind, model), counts in sorted(billed.items()):
        cost: float | None = 0.0
        note = "nothing billed"
        if counts["input_tokens"] + counts["output_tokens"] > 0:
            if kind:
                price, note = price_for(kind, model)  # a kind the registry does not know is priced as a hosted API
            else:
                price, note = None, "rows that name no provider: cost unknown"
            cost = None if price is None else price.cost(Usage(**counts))
        if cost is None:
            usd = None
            notes.append(note)
        elif usd is not None:
            usd += cost
        groups.append({"provider": kind, "model": model, "usd": cost, "price": note, **counts})
    return {
        **total, "rows": n_rows, "cached_rows": cached, "usd": usd, "cost_notes": notes,
        "groups": groups, "latency_sum_s": float(sum(latency)), "latency_mean_s": float(np.mean(latency)) if latency else None,
        "latency_max_s": max(latency) if latency else None,
    }  # fmt: skip


def _counts(usage: Any, fields: Sequence[str]) -> dict[str, int]:
    usage = usage if isinstance(usage, Mapping) else {}
    return {f: int(v) if isinstance(v := usage.get(f), (int, float)) and not isinstance(v, bool) and math.isfinite(v) else 0 for f in fields}


def _identity(rows: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, int]]:
    """What produced the rows, each value with how many rows it produced: provider/model, and from the rows'
    provenance the SDK version, the model the responses named, the model file's sha256, runtime, templates."""
    found: dict[str, Counter[str]] = {name: Counter() for name in ("provider", "sdk", "served.model", "served.model_sha256", "served.runtime", "served.system_fingerprint", "templates", "calibration", "options")}

    def add(provenance: Any) -> None:
        if not isinstance(provenance, Mapping):
            return
        served = provenance.get("served")
        served = served if isinstance(served, Mapping) else {}
        for key in ("sdk", "calibration", "options"):
            if provenance.get(key):
                found[key][str(provenance[key])] += 1
        for key in ("model", "model_sha256", "runtime", "system_fingerprint"):
            if served.get(key):
                found[f"served.{key}"][str(served[key])] += 1
        for template in provenance.get("templates") or []:
            found["templates"][str(template)] += 1

    for row in rows:
        name = "/".join(str(x) for x in (row.get("provider"), row.get("model")) if x)
        if name:
            found["provider"][name] += 1
        add(row.get("provenance"))
        parts = row.get("parts")
        if isinstance(parts, Mapping) and not isinstance(row.get("provenance"), Mapping):  # a jury: its judges'
            for part in parts.values():
                if isinstance(part, Mapping):
                    add(part.get("provenance"))
    return {key: dict(counter.most_common()) for key, counter in found.items() if counter}


def _header(run: Run) -> dict[str, Any]:
    rows = list(run.rows.values())
    return {
        "name": run.name,
        "files": run.files,
        "items": len({key[0] for key in run.rows}),
        "rows": len(rows),
        "lines": run.n_lines,
        "skipped": run.skipped,
        "criteria": dict(Counter(key[1] for key in run.rows)),
        "statuses": dict(Counter(str(r.get("status") or ("ok" if r.get("score") is not None else "unparsed")) for r in rows).most_common()),
        "methods": dict(Counter(str(r.get("method") or "unknown") for r in rows).most_common()),
        "asked": run.asked,
        "identity": _identity(rows),
        "usage": _usage(rows),
    }


# -- per criterion ------------------------------------------------------------------------------------------------


def histogram(values: Sequence[float], bins: int = MAX_BINS) -> dict[str, Any] | None:
    """A histogram of ``values``: one bar per value where they are whole numbers taking at most ``bins`` values
    (a label scale's scores), else ``bins`` equal-width bins over their range (numpy's edges: the last bin is
    closed)."""
    if not values:
        return None
    array = np.asarray(values, dtype=float)
    distinct = np.unique(array)
    summary = {"n": int(array.size), "mean": float(array.mean()), "median": float(np.median(array)), "min": float(array.min()), "max": float(array.max())}
    if distinct.size <= bins and np.all(distinct == np.round(distinct)):
        counts = [int(np.count_nonzero(array == v)) for v in distinct]
        return {"discrete": True, "values": [float(v) for v in distinct], "counts": counts, **summary}
    binned, edges = np.histogram(array, bins=bins)
    return {"discrete": False, "edges": [float(e) for e in edges], "counts": [int(c) for c in binned], **summary}


def _criteria(names: Sequence[str], run: Run, scores: Sequence[float | None], crit: Sequence[int], lows: Sequence[float | None], highs: Sequence[float | None]) -> list[dict[str, Any]]:
    out = []
    for index, name in enumerate(names):
        mine = [i for i, c in enumerate(crit) if c == index]
        values = [s for i in mine if (s := scores[i]) is not None]
        widths = [highs[i] - lows[i] for i in mine if lows[i] is not None and highs[i] is not None]  # type: ignore[operator]
        ends = [v for i in mine for v in (scores[i], lows[i], highs[i]) if v is not None]
        jury_rows = [row for (_, c), row in run.rows.items() if c == name and row.get("method") == "jury"]
        alpha = None
        if jury_rows:
            found = agreement(jury_rows)
            alpha = found.model_dump()
        out.append({
            "name": name, "n": len(mine), "scored": len(values), "scores": histogram(values), "widths": histogram(widths),
            "axis": [min(ends), max(ends)] if ends else None, "jury": alpha,
        })  # fmt: skip
    return out


# -- beside the run: a second run, a card, a gate report -------------------------------------------------------------


def _compare(run: Run, other: Run, keys: Sequence[Key], tolerance: float, strings: _Table) -> tuple[dict[str, Any], dict[str, list[Any]]]:
    """The two-run diff (:func:`judgesdk.meta.diff.diff_rows`, run = old, other = new), and per item of ``run``
    the other run's score and status, the delta and, for a moved item, what changed in the judge's record."""
    report = diff_rows(run.rows, other.rows, tolerance=tolerance, old_name=run.name, new_name=other.name)
    moved = {(c.id, c.criterion): c for c in report.changed}
    columns: dict[str, list[Any]] = {"b": [], "bst": [], "dl": [], "ch": []}
    changed_index = []
    for i, key in enumerate(keys):
        row = other.rows.get(key)
        score_b = _finite(row.get("score")) if row is not None else None
        score_a = _finite(run.rows[key].get("score"))
        columns["b"].append(score_b)
        columns["bst"].append(None if row is None else strings.add(str(row.get("status") or ("ok" if score_b is not None else "unparsed"))))
        columns["dl"].append(None if score_a is None or score_b is None else score_b - score_a)
        change = moved.get(key)
        columns["ch"].append(None if change is None else {k: list(v) for k, v in change.causes.items()})
        if change is not None:
            changed_index.append(i)
    deltas = [d for d in columns["dl"] if d is not None]
    summary = report.model_dump(mode="json", exclude={"changed"})
    summary.update({"changed": changed_index, "n_changed": len(report.changed), "deltas": histogram(deltas), "header": _header(other)})
    return summary, columns


def _card(card: Any) -> dict[str, Any]:
    return card.model_dump(mode="json")


def _gate(verdict: Any, index: Mapping[Key, int], by_id: Mapping[str, list[int]]) -> tuple[dict[str, Any], dict[int, list[int]]]:
    """The verdict, and per item the failed gates that name it (by index into the verdict's gates)."""
    data = verdict.model_dump(mode="json")
    failing: dict[int, list[int]] = {}
    gates = []
    for g_index, gate in enumerate(verdict.gates):
        named: list[int] = []
        if gate.outcome != "pass":
            for field in GATE_ITEM_LISTS:
                ids = gate.details.get(field)
                if not isinstance(ids, list):
                    continue
                for item_id in ids:
                    found = [index[(str(item_id), gate.criterion)]] if gate.criterion is not None and (str(item_id), gate.criterion) in index else by_id.get(str(item_id), [])
                    named.extend(found)
        named = sorted(set(named))
        for i in named:
            failing.setdefault(i, []).append(g_index)
        gates.append({"items": named})
    data["item_lists"] = gates
    return data, failing


# -- the page's data ---------------------------------------------------------------------------------------------


def page_data(
    run: Run,
    *,
    compare: Run | None = None,
    inputs: Mapping[str, Mapping[str, str]] | None = None,
    card: Any = None,
    verdict: Any = None,
    tolerance: float = 0.01,
    title: str | None = None,
    live: bool = False,
) -> dict[str, Any]:
    """Everything the page shows (module docstring), as JSON values; rows read from a file may hold non-finite
    numbers and lone surrogates, which :func:`judgesdk.view.html.data_json` turns into null and U+FFFD.

    ``run``: the run shown (:func:`judgesdk.view.load.read_run`); ``compare``: a second run to set beside it, as
    ``judgesdk diff`` does with ``run`` as the old one; ``inputs``: the items' texts by id
    (:func:`~judgesdk.view.load.read_inputs`), preferred to the texts rows carry; ``card``: a judge card
    (:class:`judgesdk.meta.card.Card`); ``verdict``: a gate report (:class:`judgesdk.gate.verdict.Verdict`),
    whose failed gates flag the items they name; ``tolerance``: how far a score may move between the two runs
    before the item counts as changed; ``title``: the page's title, by default ``"judgesdk view: <run name>"``;
    ``live``: the page is served and refreshed (``--serve``), so an empty run is shown instead of refused.
    Returns the dict :func:`judgesdk.view.html.render_page` lays out; an :class:`InputError` when ``run`` has no
    rows (unless ``live``) or none with a score or a status (an items file given as the run)."""
    if not run.rows and not live:  # --serve shows an empty run, and its rows as they come
        raise InputError(f"{run.name} holds no result rows: nothing to show (for a run still starting, use --serve)")
    if run.rows and not any("score" in row or "status" in row for row in run.rows.values()):
        raise InputError(f"{run.name} holds no judge results (no row has a score or a status): is it the items file? Give that with --input")
    strings, texts, provenance = _Table(), _Table(), _Table()
    keys = list(run.rows)
    crit_names: list[str] = []
    crit_of: dict[str, int] = {}
    items: dict[str, list[Any]] = {k: [] for k in ("id", "c", "s", "st", "m", "f", "lo", "hi", "out", "src", "ref", "ctx", "d")}
    review_notes = 0
    for item_id, criterion in keys:
        row = run.rows[(item_id, criterion)]
        score = _finite(row.get("score"))
        status = str(row.get("status") or ("ok" if score is not None else "unparsed"))
        details = row.get("details")
        details = details if isinstance(details, Mapping) else {}
        review, reasons, risk, unread = _review(row, criterion or "criterion")
        low, high = _interval(details)
        if criterion not in crit_of:
            crit_of[criterion] = len(crit_names)
            crit_names.append(criterion)
        items["id"].append(item_id)
        items["c"].append(crit_of[criterion])
        items["s"].append(score)
        items["st"].append(strings.add(status))
        items["m"].append(strings.add(str(row.get("method") or "unknown")))
        items["f"].append(_flags(row, score, review))
        items["lo"].append(low)
        items["hi"].append(high)
        own = (inputs or {}).get(item_id, {})
        for column, name in (("out", "output"), ("src", "source"), ("ref", "reference"), ("ctx", "context")):
            text = own.get(name, row.get(name))
            items[column].append(texts.add(text) if isinstance(text, str) and text else None)
        detail = _detail(row, provenance, strings)
        if reasons or risk is not None:
            detail["review"] = {"needs_review": review, "reasons": reasons, "risk": risk}
        if unread:
            detail["unread"] = unread
            review_notes += 1
        items["d"].append(detail)
    index = {key: i for i, key in enumerate(keys)}
    by_id: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        by_id.setdefault(key[0], []).append(i)
    notes = []
    if len([a for a in run.asked if a]) > 1:
        notes.append(f"{run.name} holds rows of {len(run.asked)} questions (criterion/method/judge configuration); the latest row per item and criterion is shown")
    if run.skipped:
        notes.append(f"{run.skipped} line(s) of {run.name} were not JSON (a line cut by a crash) and were skipped")
    if run.dropped:
        notes.append(f"{len(run.dropped)} row(s) of {run.name} were left out: their distribution is no label distribution (first: {run.dropped[0]})")
    if review_notes:
        notes.append(f"{review_notes} row(s) could not be read as results for the review flag; their details say why")
    if inputs is not None:
        missing = sum(1 for item_id, _ in keys if item_id not in inputs)
        if missing:
            notes.append(f"{missing} row(s) have no item of that id in the input file: their texts are not shown")
    data: dict[str, Any] = {
        "format": FORMAT,
        "title": title or f"judgesdk view: {run.name}",
        "live": live,
        "flags": list(FLAGS),
        "run": _header(run),
        "criteria": _criteria(crit_names, run, items["s"], items["c"], items["lo"], items["hi"]),
        "compare": None,
        "card": None,
        "gate": None,
        "notes": notes,
    }
    if compare is not None:
        data["compare"], columns = _compare(run, compare, keys, tolerance, strings)
        if data["compare"]["nothing_compared"]:  # as `judgesdk diff` says it (exit 2), never "nothing moved"
            notes.append(f"nothing to compare with {compare.name}: {data['compare']['nothing_compared']}")
        for i in data["compare"]["changed"]:
            items["f"][i] |= _BIT["changed"]
        items.update(columns)
    if card is not None:
        data["card"] = _card(card)
    if verdict is not None:
        data["gate"], failing = _gate(verdict, index, by_id)
        for i, gates in failing.items():
            items["f"][i] |= _BIT["gate_failed"]
            items["d"][i]["gates"] = gates
    data.update({"strings": strings.values, "texts": texts.values, "provenance": provenance.values, "items": items})
    return data
