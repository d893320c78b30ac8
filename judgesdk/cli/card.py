"""``judgesdk card``: run a judge configuration over a labelled set (or read its results) and write a judge card.

    judgesdk card --dataset summeval [--docs 10] [--criteria coherence,...] --method auto -o RESULTS.jsonl \\
        --card benchmarks/cards/NAME [--bootstrap 1000] [judge flags: --config, --provider, --option...]
    judgesdk card --human LABELLED.jsonl --results RESULTS.jsonl --criteria quality --card NAME

The labelled set is a shared benchmark (``--dataset``, from ``../shared/data``) or any JSONL with the human
file's fields (``--human``: doc_id, system_id, output, scores, optionally source, reference and
annotator_scores), optionally cut to its first ``--docs`` documents and some ``--systems``. With ``-o`` each
criterion is judged into a results file written as ``judgesdk score -o`` writes it (the same ledger, rows,
ids and question key, through the same code): a re-run judges only the items without a final row, so an
interrupted run resumes. With several criteria each has its own file, ``RESULTS.<criterion>.jsonl``. With
``--results`` nothing is judged: the files (named the same way) are read. Method ``pairwise`` ranks each
document's outputs by comparisons in both orders (004; ``--strategy``, ``--budget``) and writes one row per
output holding its win ratio and the verdicts in which it was shown first (positional bias comes from them).

The card (:mod:`judgesdk.meta.card`, written by :mod:`judgesdk.meta.card_files`) goes to ``--card STEM``: ``STEM.md`` and
``STEM.json``. Its agreement figures are ``judgesdk meta-eval``'s on the same files (each section prints the
command that reproduces them). Exit codes: 0 card written, 3 bad input (the message says what to fix), 130
interrupted (finished rows kept: run the same command again).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgesdk.cli.flags import add_judge_flags, config_mapping, judge_rows
from judgesdk.core import ExitCode, InputError

__all__ = ["register", "results_path", "run_card"]

PAIRWISE = "pairwise"


def register(commands: Any) -> None:
    """Add ``card`` to an ``argparse`` subparsers object."""
    p = commands.add_parser(
        "card", help="run a judge over a labelled set (or read its results) and write a judge card (Markdown + JSON)",
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("--dataset", help="a shared benchmark: summeval, topicalchat, newsroom, hanna (or --human FILE)")
    p.add_argument("--human", type=Path, help="labelled JSONL with the human file's fields (see ../shared/data/README.md)")
    p.add_argument("--data-dir", type=Path, help="folder with <dataset>.jsonl (default: ../shared/data or $JUDGESDK_SHARED_DATA)")
    p.add_argument("--criteria", help="comma list of human dimensions (default: the dataset preset's criteria, else every dimension)")
    p.add_argument("--docs", type=int, help="only the first N documents of the file (default: all)")
    p.add_argument("--systems", help="comma list of system ids (default: all)")
    p.add_argument("--text", choices=["natural", "published"],
                   help="text the judge reads: natural (untokenized, recased; default for --dataset, what the fused judge was "
                   "fitted on) or published (the file's text as it is; default for --human)")  # fmt: skip
    p.add_argument("--method", help=f"scoring method (default: the config's, auto), or {PAIRWISE}: win ratios from comparisons")
    p.add_argument("-o", "--output", type=Path, help="results file to judge into (resumable; RESULTS.<criterion>.jsonl with several criteria)")
    p.add_argument("--results", type=Path, help="read existing results instead of judging (named as for -o)")
    p.add_argument("--samples", type=int, help="samples per item for sampling methods (the config's estimation.samples)")
    p.add_argument("--strategy", default="symmetric", help="pairwise: comparison set (full, random, no-repeat, symmetric; default symmetric)")
    p.add_argument("--budget", type=int, default=48, help="pairwise: comparisons per document (default 48; full: n(n-1))")
    p.add_argument("--card", type=Path, required=True, metavar="STEM", help="write STEM.md and STEM.json")
    p.add_argument("--title", help="the card's title (default: dataset, method, subset)")
    p.add_argument("--bootstrap", type=int, default=1000, metavar="N", help="bootstrap CIs with N document resamples (default 1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    add_judge_flags(p, template_help="template id or TOML path (default: the method's own)")
    p.set_defaults(func=run_card)


def results_path(base: Path, criterion: str, several: bool) -> Path:
    """The results file of one criterion: ``base`` itself, or ``<stem>.<criterion><suffix>`` with several."""
    if not several:
        return base
    return base.with_name(f"{base.stem}.{criterion}{base.suffix or '.jsonl'}")


# -------------------------------------------------------------------------------------------------
# The labelled set
# -------------------------------------------------------------------------------------------------


def _check_args(args: argparse.Namespace) -> None:
    if (args.dataset is None) == (args.human is None):
        raise InputError("give the labelled set with --dataset NAME (a shared benchmark) or --human FILE, one of them")
    if (args.output is None) == (args.results is None):
        raise InputError("give -o RESULTS.jsonl (judge into it, resumable) or --results RESULTS.jsonl (read existing results), one of them")
    if args.docs is not None and args.docs < 1:
        raise InputError(f"--docs must be at least 1, got {args.docs}")
    if args.bootstrap < 0:
        raise InputError(f"--bootstrap must be 0 or more resamples, got {args.bootstrap}")
    if args.samples is not None and args.samples < 1:
        raise InputError(f"--samples must be at least 1, got {args.samples}")
    if args.budget < 1:
        raise InputError(f"--budget must be at least 1 comparison per document, got {args.budget}")
    from judgesdk.scorers import STRATEGIES

    if args.method == PAIRWISE and args.strategy not in STRATEGIES:
        raise InputError(f"--strategy must be one of {', '.join(STRATEGIES)}, got {args.strategy!r}")


def _labelled(args: argparse.Namespace) -> tuple[list[Any], list[Any], str, str, str]:
    """(the whole human file, the selection the judge reads, the file's name, the subset in words, the text view)."""
    from judgesdk.meta import load_dataset, load_jsonl, select, shared_data_dir

    if args.dataset is not None:
        records = load_dataset(args.dataset, args.data_dir)
        base = args.data_dir or shared_data_dir()
        human_file = _shown(Path(base) / f"{args.dataset}.jsonl") if base is not None else f"{args.dataset}.jsonl"
    else:
        records = load_jsonl(args.human)
        human_file = str(args.human)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()] if args.systems else None
    chosen = select(records, docs=args.docs, systems=systems)
    n_docs = len({r.doc_id for r in chosen})
    all_docs = len({r.doc_id for r in records})
    if args.docs and args.docs < all_docs:
        subset = f"the first {n_docs} documents of {all_docs} in file order"
    else:
        subset = f"all {all_docs} documents"
    subset += f", systems {', '.join(systems)}" if systems else ", every system"
    text = args.text or ("natural" if args.dataset is not None else "published")
    view = chosen
    if text == "natural":
        from judgesdk.meta import natural

        view = [natural(r) for r in chosen]
    return records, view, human_file, subset, text


def _shown(path: Path) -> str:
    """A path as the card shows it: relative to the working directory (a card shipped in a repository stays
    true when the repository moves), absolute when it cannot be."""
    import os

    try:
        return os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return str(path)


def _criteria(args: argparse.Namespace, records: Sequence[Any]) -> list[Any]:
    from judgesdk.core import Criterion, JudgeSDKError
    from judgesdk.meta import dimensions, require_dimension, scale_for
    from judgesdk.prompting import criteria_for
    from judgesdk.prompting import criterion as presets_criterion

    dataset = args.dataset or next((r.dataset for r in records if r.dataset), "")
    if args.criteria:
        names = [n.strip() for n in args.criteria.split(",") if n.strip()]
    else:
        try:
            names = [c.name for c in criteria_for(dataset)] if dataset else dimensions(records)
        except (JudgeSDKError, KeyError, ValueError):
            names = dimensions(records)
    if not names:
        raise InputError("--criteria is empty: give a comma list of the human file's dimensions")
    out = []
    for name in names:
        require_dimension(records, name)
        try:
            out.append(presets_criterion(dataset, name))
        except (JudgeSDKError, KeyError, ValueError):
            scale, _ = scale_for(records, name)
            out.append(Criterion(name=name, description=name, scale=scale))
    return out


def _items(view: Sequence[Any]) -> list[tuple[Any, dict[str, Any]]]:
    """Judge items of the selection, ids as ``judgesdk score`` gives a line with doc_id and system_id."""
    from judgesdk.core import JudgeItem
    from judgesdk.records import item_ids

    ids = item_ids([(n, {"doc_id": r.doc_id, "system_id": r.system_id}) for n, r in enumerate(view, start=1)])
    return [
        (
            JudgeItem(output=r.output, source=r.source, context=r.context, reference=r.reference, id=the_id),
            {"doc_id": r.doc_id, "system_id": r.system_id},
        )
        for r, the_id in zip(view, ids)
    ]


# -------------------------------------------------------------------------------------------------
# Judging (the score path, or pairwise rankings per document)
# -------------------------------------------------------------------------------------------------


def _config(args: argparse.Namespace) -> Any:
    from judgesdk.judging import load_config

    method = args.method
    if method == PAIRWISE:
        args = argparse.Namespace(**{**vars(args), "method": None})  # the comparisons read no scoring method
    mapping = config_mapping(args)
    if args.samples is not None:
        mapping["estimation"] = {**mapping.get("estimation", {}), "samples": args.samples}
    return load_config(mapping), method or mapping.get("method") or "auto"


def _check_one_question(ledger: Any, ask: Any, path: Path) -> None:
    others = sorted({str(row.get("asked") or row.get("criterion")) for row in ledger.rows if not ask.answers(row)})
    if others:
        raise InputError(
            f"-o {path} already holds rows of another question ({', '.join(others)}); a card reads one judge configuration "
            f"per results file (as meta-eval does): give this one ({ask.key}) its own -o"
        )


def _judge_pointwise(
    config: Any, criterion: Any, items: list[tuple[Any, dict[str, Any]]], path: Path, quiet: bool, adapters: Any = None
) -> tuple[int, bool]:
    """Judge the items without a final row in ``path`` as ``judgesdk score -o`` does. Returns (judged now, interrupted)."""
    from judgesdk.judging import Judge, Task, ask_for, pending
    from judgesdk.records import Ledger

    ask = ask_for(config, criterion)
    judge = Judge.from_config(config, adapters=adapters)
    try:
        for reason in judge.check_providers():
            print(f"judgesdk: skipping {reason}", file=sys.stderr)
        ledger = Ledger.open(path, what="-o", create_parents=False)
        if ledger.notice:  # what resuming did with unreadable lines, as `score` says it
            print(f"judgesdk: {ledger.notice}", file=sys.stderr)
    except BaseException:
        judge.close()
        raise
    try:
        try:
            _check_one_question(ledger, ask, path)
            task, _ = pending(Task(criterion, items, ask), ledger)
        except BaseException:
            judge.close()
            raise
        if not task.items:
            judge.close()
            return 0, False
        outcome, _ = judge_rows(judge, task, ledger, quiet=quiet)  # closes the judge
    finally:
        ledger.close()
    judge.require_usable()
    return len(outcome.results), outcome.interrupted


def _judge_pairwise(
    config: Any, criterion: Any, items: list[tuple[Any, dict[str, Any]]], path: Path, strategy: str, budget: int, seed: int,
    adapters: Any = None,
) -> tuple[int, bool]:
    """Rank each document's outputs (``judge.rank``) and write one row per output: its win ratio, and the
    verdicts of the comparisons in which it was shown first. A document whose rows are all final is skipped."""
    from judgesdk.core import JudgeResult
    from judgesdk.judging import Judge, ask_for
    from judgesdk.records import Ledger, is_final, row_for

    label = f"{PAIRWISE}/{strategy}" + (f"/{budget}" if strategy != "full" else "")
    ask = ask_for(config, criterion, method=label)
    judged = 0
    with Judge.from_config(config, adapters=adapters) as judge, Ledger.open(path, what="-o") as ledger:
        if ledger.notice:
            print(f"judgesdk: {ledger.notice}", file=sys.stderr)
        for reason in judge.check_providers():
            print(f"judgesdk: skipping {reason}", file=sys.stderr)
        _check_one_question(ledger, ask, path)
        earlier = ledger.latest(ask)
        docs: dict[str, list[tuple[Any, dict[str, Any]]]] = {}
        for item, extra in items:
            docs.setdefault(extra["doc_id"], []).append((item, extra))
        try:
            for group in docs.values():
                if all(is_final(earlier.get(item.id or "")) for item, _ in group):
                    continue
                if len(group) < 2:
                    raise InputError(f"document {group[0][1]['doc_id']} has one output: pairwise needs at least two per document")
                n = len(group)
                ranking = judge.rank(
                    [item.output for item, _ in group], source=group[0][0].source or "", criterion=criterion, strategy=strategy,
                    budget=None if strategy == "full" else min(budget, n * (n - 1)), seed=seed, ids=[item.id for item, _ in group],
                )  # fmt: skip
                systems = [extra["system_id"] for _, extra in group]
                for index, ((item, extra), score) in enumerate(zip(group, ranking.scores)):
                    mine = [c for c in ranking.comparisons if c.first == index]
                    usage = _share(ranking.usage, n, index)
                    result = JudgeResult(
                        score=score, status="ok" if score is not None else "unparsed", criterion=criterion.name, method=label,
                        provider=ranking.provider, model=ranking.model, usage=usage, latency_s=ranking.latency_s / n,
                        cached=all(c.cached for c in mine) if mine else False, notes=list(ranking.notes),
                    )  # fmt: skip
                    comparisons = [
                        {"first": systems[c.first], "second": systems[c.second], "winner": c.verdict, "p_first": c.p_first}
                        for c in mine
                    ]
                    ledger.write(row_for(result, item.id or "", ask, {**extra, "comparisons": comparisons}))
                    judged += 1
        except KeyboardInterrupt:
            return judged, True
    return judged, False


def _share(usage: Any, n: int, index: int) -> Any:
    """Output ``index``'s share of a document's usage: the integer parts split so that the shares add up."""
    from judgesdk.provider import Usage

    fields = {}
    for name, total in usage.model_dump().items():
        base, extra = divmod(int(total), n)
        fields[name] = base + (1 if index < extra else 0)
    return Usage(**fields)


# -------------------------------------------------------------------------------------------------
# The command
# -------------------------------------------------------------------------------------------------


def _identity(config: Any, rows_dir: Sequence[Path], adapters: Any = None) -> tuple[str, str]:
    """The model's identity: the configured provider's (``identity_of``: a model file's hash), else the rows'
    ``provenance`` where they carry one, else the API model id the rows name."""
    from judgesdk.judging import Judge
    from judgesdk.provider import identity_of
    from judgesdk.records import read_results

    if config is not None:
        judge = Judge.from_config(config, adapters=adapters)
        try:
            judge.check_providers()
            found = identity_of(judge.provider(0))
        finally:
            judge.close()
        if found:
            return found, "the provider's identity (judgesdk.provider.protocol.identity_of)"
    for path in rows_dir:
        rows = read_results(path).rows
        for row in reversed(rows):
            provenance = row.passed("provenance")  # untyped by the schema: checked here
            served = (provenance or {}).get("served") if isinstance(provenance, dict) else None
            if isinstance(served, dict):
                for key in ("model_sha256", "model"):
                    if served.get(key):
                        return str(served[key]), f"the rows' provenance.served.{key}"
    for path in rows_dir:
        rows = read_results(path).rows
        models = sorted({str(r.passed("model")) for r in rows if r.passed("model")})
        if models:
            return ", ".join(models), "the model id the rows name (no hash recorded)"
    return "", ""


def _earlier_runs(stem: Path) -> dict[tuple[str, str, int], dict[str, Any]]:
    """The wall clock an earlier card at ``stem`` measured per (criterion, results file, items), so that a card
    written again from results judged before keeps it; nothing when there is no readable card there."""
    from pydantic import ValidationError

    from judgesdk.meta import Card

    path = stem.with_name(stem.name + ".json")
    try:
        card = Card.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return {}
    return {
        (s.criterion, s.results_file, s.n_items): {"run_items_judged": s.run_items_judged, "run_wall_seconds": s.run_wall_seconds, "run_concurrency": s.run_concurrency}
        for s in card.criteria
        if s.run_items_judged
    }


def _notes(method: str, sections: Sequence[Any], dataset: str = "") -> list[str]:
    """What a reader of the card must know to read its figures."""
    from judgesdk.records import read_results

    notes = []
    fitted_here = [
        s.criterion for s in sections
        if dataset and any(f"fitted on {dataset} " in str(r.passed("method_reason") or "") for r in read_results(s.results_file).rows[:50])
    ]  # fmt: skip
    if fitted_here:
        notes.append(
            f"The rows say their scores come from a model fitted on {dataset} itself ({', '.join(fitted_here)}): agreement "
            "here is in-sample, so optimistic; the fit's cross-validated figures are in its own record (benchmarks/README.md)."
        )
    if method == PAIRWISE:
        notes.append(
            "Scores are win ratios among one document's outputs (004): comparable within a document only, so the "
            "sample level is the figure that means something; summary and system levels pool them across documents."
        )
    cached = [s.criterion for s in sections if s.throughput is not None and (s.throughput.share_cached or 0) > 0.5]
    if cached:
        notes.append(
            f"Most rows of {', '.join(cached)} were served from the response cache (the same model requests as an "
            "earlier criterion or run): their latency is the cache's, their tokens as recorded when first computed."
        )
    return notes


def run_card(args: argparse.Namespace, *, adapters: Sequence[Any] | None = None) -> int:
    """The ``card`` command (module docstring). ``adapters`` replace the configured providers (e.g. a scripted
    provider in tests), as in :meth:`judgesdk.judging.judge.Judge.from_config`."""
    from importlib.metadata import PackageNotFoundError, version

    from judgesdk.meta import JudgeIdentity, LabelledSet, build_card, criterion_card, write_card

    _check_args(args)
    records, view, human_file, subset, text = _labelled(args)
    criteria = _criteria(args, records)
    several = len(criteria) > 1
    base = args.output or args.results
    paths = {c.name: results_path(base, c.name, several) for c in criteria}
    card_stem = args.card.with_suffix("") if args.card.suffix in (".md", ".json") else args.card
    if not card_stem.parent.is_dir():
        raise InputError(f"--card {args.card}: folder {card_stem.parent} does not exist; create it or choose another path")
    config, method = None, args.method or "auto"
    runs: dict[str, tuple[int, float]] = {}  # criterion -> (items judged now, wall seconds)
    if args.output is not None:
        if base.is_dir():
            raise InputError(f"-o {base} is a directory: give the path of a results file, e.g. -o {base / 'results.jsonl'}")
        if not base.parent.is_dir():
            raise InputError(f"-o {base}: folder {base.parent} does not exist; create it or choose another path")
        config, method = _config(args)
        items = _items(view)
        for crit in criteria:
            path = paths[crit.name]
            started = time.perf_counter()
            if method == PAIRWISE:
                judged, interrupted = _judge_pairwise(config, crit, items, path, args.strategy, args.budget, args.seed, adapters)
            else:
                judged, interrupted = _judge_pointwise(config, crit, items, path, args.quiet, adapters)
            if interrupted:
                print(f"judgesdk card: interrupted: finished rows are in {path}; run the same command again to resume", file=sys.stderr)
                return ExitCode.INTERRUPTED
            runs[crit.name] = (judged, time.perf_counter() - started)
            print(f"judgesdk card: {crit.name}: judged {judged} now, {len(items) - judged} from earlier runs ({path})", file=sys.stderr)
    else:
        for path in paths.values():  # a file, or the folder `score --engine ray -o` writes (read by judgesdk.records.read_results)
            if not path.is_file() and not path.is_dir():
                raise InputError(f"--results: {path} does not exist" + (" (with several criteria, each has RESULTS.<criterion>.jsonl)" if several else ""))
    selected = {(r.doc_id, r.system_id) for r in view}
    sections = [
        criterion_card(
            records, c.name, paths[c.name], selected=selected, method=method, bootstrap=args.bootstrap, seed=args.seed,
            human_file=human_file,
        )  # fmt: skip
        for c in criteria
    ]
    earlier = _earlier_runs(card_stem)
    for i, section in enumerate(sections):
        judged, wall = runs.get(section.criterion, (0, 0.0))
        if judged:
            sections[i] = section.model_copy(
                update={"run_items_judged": judged, "run_wall_seconds": wall, "run_concurrency": config.concurrency if config and method != PAIRWISE else None}
            )
        elif (section.criterion, section.results_file, section.n_items) in earlier:  # nothing judged now: keep the
            sections[i] = section.model_copy(update=earlier[(section.criterion, section.results_file, section.n_items)])  # clock of the run that did
    identity, source = _identity(config, list(paths.values()), adapters)
    try:
        sdk = version("judgesdk")
    except PackageNotFoundError:  # pragma: no cover - a source tree never installed
        sdk = "unknown"
    options: dict[str, Any] = {}
    if config is not None:
        from judgesdk.scorers import is_method, method_spec

        samples = is_method(method) and method_spec(method).samples  # its score is a mean over sampled answers
        options = {k: v for k, v in {
            "template": config.template, "dataset": config.dataset, **config.method_options,
            "samples": config.estimation.samples if samples or args.samples else None,
            "temperature": config.estimation.temperature if samples else None,
            "strategy": args.strategy if method == PAIRWISE else None, "budget": args.budget if method == PAIRWISE and args.strategy != "full" else None,
        }.items() if v is not None}  # fmt: skip
    dataset = args.dataset or next((r.dataset for r in records if r.dataset), "")
    judge = JudgeIdentity(method=method, model_identity=identity, identity_source=source, sdk_version=sdk, options=options)
    data = LabelledSet(
        human_file=human_file, dataset=dataset, subset=subset, n_items=len(view),
        n_documents=len({r.doc_id for r in view}), n_systems=len({r.system_id for r in view}), text=text,
    )  # fmt: skip
    title = args.title or f"{dataset or human_file}, method {method}, {subset}"
    card = build_card(title, judge, data, sections, created=_dt.date.today().isoformat(), notes=_notes(method, sections, dataset))
    files = write_card(card, card_stem)
    print(f"judgesdk card: written {', '.join(str(f) for f in files)}", file=sys.stderr)
    return ExitCode.OK
