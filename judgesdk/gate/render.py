"""Renderings of a verdict: console text, JSON, JUnit XML, Markdown, and writing them to files.

Each is a pure function of the :class:`~judgesdk.gate.verdict.Verdict`, so every output agrees with
the exit code; :func:`write_reports` also appends the Markdown to ``$GITHUB_STEP_SUMMARY`` when set.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from judgesdk.core import InputError
from judgesdk.gate.verdict import Verdict

_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "undetermined": "UNDETERMINED"}
_ICONS = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "undetermined": "⚠️"}


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    if float(value).is_integer() and abs(value) >= 10:
        return str(int(value))
    return f"{value:.4f}" if abs(value) < 0.01 and value != 0 else f"{value:.3f}"


def _usage_line(verdict: Verdict) -> str | None:
    u = verdict.usage
    if u is None:
        return None
    cost = f"${u.usd:.4f}" if u.usd is not None else "unknown (" + "; ".join(u.notes) + ")"
    return (
        f"usage: {u.n_results} results ({u.n_cached} from cache); billed {u.billed.input_tokens} input + "
        f"{u.billed.output_tokens} output tokens in {u.billed.calls} calls; estimated cost {cost}"
    )


def render_text(verdict: Verdict) -> str:
    """The console report of ``verdict``: the verdict line first, one line per gate, then notes, source and usage.
    Returns the text, lines joined by newlines (no trailing one)."""
    lines = [f"judgesdk gate: {_WORDS[verdict.status]}: {verdict.headline} (exit {verdict.exit_code})"]
    for g in verdict.gates:
        lines.append(
            f"  {_WORDS[g.outcome]:<12} {g.name} [{g.kind}] observed {_num(g.observed)} {g.op} {_num(g.threshold)}: {g.message}"
        )
    lines += [f"  note: {note}" for note in verdict.notes]
    if verdict.source:
        lines.append(f"  source: {verdict.source}")
    usage = _usage_line(verdict)
    if usage:
        lines.append(f"  {usage}")
    return "\n".join(lines)


def render_json(verdict: Verdict) -> str:
    """``verdict`` as indented JSON, every field (what ``--json-report`` writes and ``judgesdk view --gate``
    reads back as a :class:`Verdict`). Returns the text, without a trailing newline."""
    return verdict.model_dump_json(indent=2)


def render_junit(verdict: Verdict) -> str:
    """JUnit XML: one testcase per gate; a failed gate is a <failure>, an undetermined one an <error>.

    ``verdict``: the gate run's verdict, whose status, exit code and headline become the suite's properties.
    Returns the XML document as text, with its declaration and a trailing newline."""
    suite = ET.Element(
        "testsuite",
        name="judgesdk gate",
        tests=str(len(verdict.gates)),
        failures=str(sum(g.outcome == "fail" for g in verdict.gates)),
        errors=str(sum(g.outcome == "undetermined" for g in verdict.gates)),
        skipped="0",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("status", verdict.status), ("exit_code", str(verdict.exit_code)), ("headline", verdict.headline)):
        ET.SubElement(props, "property", name=key, value=value)
    for g in verdict.gates:
        case = ET.SubElement(suite, "testcase", classname=f"judgesdk.gate.{g.kind}", name=g.name)
        summary = f"observed {_num(g.observed)} {g.op} {_num(g.threshold)}: {g.message}"
        if g.outcome == "fail":
            ET.SubElement(case, "failure", message=g.message, type=g.check).text = summary
        elif g.outcome == "undetermined":
            ET.SubElement(case, "error", message=g.message, type="undetermined").text = summary
        ET.SubElement(case, "system-out").text = summary
    root = ET.Element("testsuites", name="judgesdk gate")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _side(interval: Mapping[str, Any] | None) -> str:
    if not interval:
        return "—"
    n = interval.get("n")
    return f"{_num(interval['estimate'])} [{_num(interval['low'])}, {_num(interval['high'])}]" + (f" (n={n})" if n is not None else "")


def _corrected_rows(verdict: Verdict) -> list[str]:
    """Judge-only, human-only and corrected intervals side by side, one row per corrected gate."""
    rows = []
    for g in verdict.gates:
        sides = g.details.get("intervals")
        if not isinstance(sides, Mapping):
            continue
        d = g.details
        if "mean_change" in d:  # ppi_regression: this run's and the baseline's corrected means
            how = (f"change {d['mean_change']:+.3f} vs the baseline's corrected {_side(sides.get('baseline_corrected'))} "
                   f"(PPI++ {d['method']}, p = {d['p']:.4f})")
        elif "lam" in d:
            how = f"PPI++ ({d.get('method', 'ppi++')}), lambda {d['lam']:.2f}; {d['n_labelled']} labels worth {d['effective_labels']:.1f}"
        elif d.get("refused"):
            how = f"refused: {d['refused']}"
        else:
            how = f"Rogan-Gladen; sensitivity {d['sensitivity']:.3f}, specificity {d['specificity']:.3f}"
        rows.append(
            f"| {_cell(g.name)} | {_side(sides.get('judge_only'))} | {_side(sides.get('human_only'))} | "
            f"{_side(sides.get('corrected'))} | {_cell(how)} |"
        )
    if not rows:
        return []
    return [
        "", "### Corrected estimates (human scale)", "",
        "| gate | judge only (uncorrected) | human labels only | corrected | how |",
        "| --- | --- | --- | --- | --- |", *rows,
    ]  # fmt: skip


def render_markdown(verdict: Verdict) -> str:
    """A Markdown summary (for ``$GITHUB_STEP_SUMMARY``): headline, one table row per gate, the corrected
    gates' intervals side by side, usage. ``verdict``: the gate run's verdict. Returns the Markdown text, ending
    in a newline."""
    lines = [
        f"## judgesdk gate: {_ICONS[verdict.status]} {_WORDS[verdict.status]}",
        "",
        f"{verdict.headline[0].upper()}{verdict.headline[1:]} (exit code {verdict.exit_code}).",
        "",
        "| result | gate | kind | criterion | observed | threshold | details |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for g in verdict.gates:
        lines.append(
            f"| {_ICONS[g.outcome]} {_WORDS[g.outcome]} | {_cell(g.name)} | {g.kind} | {_cell(g.criterion or '')} | "
            f"{_num(g.observed)} | {g.op} {_num(g.threshold)} | {_cell(g.message)} |"
        )
    lines += _corrected_rows(verdict)
    extras = [*(f"- {_cell(note)}" for note in verdict.notes)]
    if verdict.source:
        extras.append(f"- source: {_cell(verdict.source)}")
    usage = _usage_line(verdict)
    if usage:
        extras.append(f"- {_cell(usage)}")
    return "\n".join(lines + ([""] + extras if extras else [])) + "\n"


def check_output(path: Path, flag: str, example: str) -> None:
    """``path`` can be written as a file (its folder made if missing); else an :class:`InputError` naming the
    fix. Checked before any work, so a typo in an output flag never throws away a finished run.

    ``flag``: the command-line option that named ``path`` (e.g. ``--junit``), quoted in the error; ``example``: a
    file name suggested inside ``path`` when it is a directory. Returns None; writes nothing."""
    if path.is_dir():
        raise InputError(f"{flag} {path} is a directory: give the path of a file, e.g. {flag} {path / example}")
    blocking = next((parent for parent in path.parents if parent.exists()), None)
    if blocking is not None and not blocking.is_dir():
        raise InputError(f"{flag} {path}: {blocking} is a file, not a folder: choose another path")


def write_output(path: Path, text: str, flag: str) -> None:
    """Write ``text`` to ``path`` (its folder made if missing); a path that cannot be written is an
    :class:`InputError` naming it, never a traceback. ``flag``: the command-line option that named ``path``,
    quoted in the error (:func:`check_output`)."""
    check_output(path, flag, "out.txt")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise InputError(f"cannot write {flag} {path}: {exc.strerror or exc}: choose a writable path") from None


def write_reports(
    verdict: Verdict, *, junit: Path | None = None, markdown: Path | None = None, json_report: Path | None = None, env: Mapping[str, str] | None = None
) -> None:
    """Write the requested renderings (the JSON one is what ``judgesdk view --gate`` reads); the Markdown is also
    appended to ``$GITHUB_STEP_SUMMARY`` when set.

    ``verdict``: the gate run's verdict; ``junit``, ``markdown``, ``json_report``: where to write each rendering,
    None to skip it; ``env``: the environment to read ``GITHUB_STEP_SUMMARY`` from, None for ``os.environ``.
    A path that cannot be written is an :class:`InputError` (:func:`write_output`)."""
    if json_report is not None:
        write_output(json_report, render_json(verdict) + "\n", "--json-report")
    if junit is not None:
        write_output(junit, render_junit(verdict), "--junit")
    if markdown is not None:
        write_output(markdown, render_markdown(verdict), "--markdown")
    summary = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(render_markdown(verdict))
