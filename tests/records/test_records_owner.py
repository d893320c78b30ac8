"""One module owns the results file (issue 13, item 3): :mod:`judgesdk.records`.

Its row schema (:class:`ResultRow`) is what the writer writes and what the readers read; its join key
(:func:`join_key`) is what ``meta-eval``, ``bench`` and ``calibrate`` join human scores on. The tests below
check that rows the writer writes round-trip through the schema, that the schema refuses a bad field with
the messages the readers always gave, and, reading the
package's source with :mod:`ast`, that no other module decodes JSON Lines itself and that every command
reading a results file gets its rows from :mod:`judgesdk.records`.
"""

from __future__ import annotations

import ast
import importlib
import json
import math
from pathlib import Path

import pytest

from judgesdk.cli.app import main
from judgesdk.core.errors import InputError
from judgesdk.core.types import JudgeResult, Scale
from judgesdk.judging.judge import Judge
from judgesdk.meta.readers import load_predictions
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.records import (
    Ask,
    ResultRow,
    RowDistribution,
    cell_id,
    encode_row,
    join_key,
    parse_row,
    read_predictions,
    result_line,
    row_for,
)

from support.source import parse

REPO = Path(__file__).resolve().parents[2]
PROBS = {"1": 0.0, "2": 0.1, "3": 0.2, "4": 0.3, "5": 0.4}


# -- the row schema -------------------------------------------------------------------------------------


def judged(reply) -> JudgeResult:
    with Judge(ScriptedProvider(lambda r: reply)) as judge:
        return judge.score("The cat sat.", source="A cat sat on the mat.", criterion="coherence", method="geval" if isinstance(reply, ScriptedReply) else "direct")


def written_rows() -> list[dict]:
    """Rows as the writer writes them, read back from their JSON line: with and without a distribution,
    with and without the input's join fields and the question asked."""
    scored, unparsed = judged(ScriptedReply(label_probs=PROBS)), judged("no idea")
    assert scored.distribution is not None and unparsed.status == "unparsed"
    ask = Ask("coherence", "geval", "0123456789")
    made = [
        row_for(scored, "d1::s1", ask, extra={"doc_id": "d1", "system_id": "s1", "topic": "cats"}),
        row_for(unparsed, "sha:abc"),
        row_for(scored.model_copy(update={"status": "error", "score": None, "error": "provider down"}), "7", ask),
    ]
    return [json.loads(encode_row(row)) for row in made]


def test_rows_the_writer_writes_round_trip_through_the_schema():
    for row in written_rows():
        typed = parse_row(row)
        assert typed.model_dump(mode="json", exclude_unset=True) == row  # nothing dropped, changed or added
        declared = set(ResultRow.model_fields) | set(ResultRow.PASSED_THROUGH)
        assert set(row) - declared <= {"topic"}, "the writer writes a field the schema does not know"
        if row["distribution"] is not None:
            assert set(row["distribution"]) <= set(RowDistribution.model_fields) | set(RowDistribution.PASSED_THROUGH)
            assert typed.distribution is not None and typed.distribution.probs == pytest.approx(PROBS)


def test_the_schema_covers_every_field_result_line_writes():
    """A field added to JudgeResult (and so to every row) must be placed: typed, or passed through."""
    line = result_line(judged(ScriptedReply(label_probs=PROBS)))
    declared = set(ResultRow.model_fields) | set(ResultRow.PASSED_THROUGH)
    assert set(line) <= declared, sorted(set(line) - declared)
    assert set(line["distribution"]) <= set(RowDistribution.model_fields) | set(RowDistribution.PASSED_THROUGH)


def test_typed_fields_of_a_row():
    row = parse_row({"id": 0, "doc_id": 12, "system_id": "M8", "score": 4, "status": "", "response": 3, "cached": 1, "samples": [3, None]})
    assert (row.id, row.doc_id, row.score, row.status, row.response, row.cached, row.samples) == ("0", "12", 4.0, None, None, True, [3.0, None])
    assert row.key == ("12", "M8") and row.model_extra == {}


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("score", "four", "score must be a finite number or null, got 'four'"),
        ("score", True, "score must be a finite number or null"),
        ("latency_s", math.inf, "latency_s must be a finite number or null"),
        ("samples", "3", "samples must be a list of numbers (or nulls)"),
        ("samples", [1, "x"], "samples[] must be a finite number or null"),
        ("distribution", [0.5, 0.5], "distribution must be an object"),
        ("distribution", {"probs": "high"}, "distribution.probs must be an object"),
        ("distribution", {"probs": [0.5, None]}, "distribution.probs[] must be a finite number, got null"),
        ("distribution", {"coverage": "all"}, "distribution.coverage must be a finite number or null"),
        ("usage", {"input_tokens": 1.5}, "usage must be an object of token counts"),
        ("usage", 12, "usage must be an object of token counts"),
    ],
)
def test_a_bad_field_is_an_input_error_naming_the_line(field, value, message):
    with pytest.raises(InputError) as caught:
        parse_row({"doc_id": "d", "system_id": "s", field: value}, "p.jsonl:3")
    assert str(caught.value).startswith("p.jsonl:3: ") and message in str(caught.value)


# -- the join key and the id rule ------------------------------------------------------------------------


def test_the_join_key_is_doc_id_and_system_id_as_text():
    assert join_key({"doc_id": 3, "system_id": "M8", "id": "x"}) == ("3", "M8")
    assert join_key({"doc_id": "d", "id": "x"}) is None and join_key({"system_id": "s"}) is None
    assert parse_row({"id": "x"}).key is None
    assert cell_id("d1", "M8") == "d1::M8"


def test_a_prediction_line_without_its_join_key_is_refused(tmp_path):
    path = tmp_path / "p.jsonl"
    path.write_text(json.dumps({"doc_id": "d0", "score": 3}) + "\n")
    with pytest.raises(InputError, match=r"p.jsonl:1: missing system_id; every prediction line needs doc_id and system_id"):
        read_predictions(path)


@pytest.fixture
def scripted_cli(monkeypatch):
    """``judgesdk score`` judging with the scripted provider (an output holding Q<n> gets score n)."""
    from_config = Judge.from_config.__func__  # type: ignore[attr-defined]

    def rule(request):
        text = "".join(m.content if isinstance(m.content, str) else "" for m in request.messages)
        digit = next((c for c in text.split("Q", 1)[-1][:1] if c.isdigit()), None) if "Q" in text else None
        return ScriptedReply(label_probs={digit: 1.0}) if digit else "I cannot tell."

    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, source=None, **kw: from_config(cls, source, adapters=[ScriptedProvider(rule)])))
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)


def test_a_results_file_of_judgesdk_score_is_read_by_meta_eval_through_the_schema(tmp_path, scripted_cli, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"doc_id": f"d{i}", "system_id": "M1", "output": f"answer Q{i}"}) + "\n" for i in (2, 4)))
    config = tmp_path / "judge.toml"
    config.write_text('method = "geval"\nconcurrency = 1\n[cache]\nenabled = false\n')
    out = tmp_path / "results.jsonl"
    assert main(["score", str(items), "-o", str(out), "--config", str(config), "--quiet", "--criterion", "coherence"]) == 0
    capsys.readouterr()
    rows = read_predictions(out)
    assert [row.key for _, row in rows] == [("d2", "M1"), ("d4", "M1")]
    assert all(row.asked and row.distribution is not None and row.usage is not None for _, row in rows)
    predictions = load_predictions(out, Scale.likert(1, 5))
    assert [(p.key, p.value, p.status) for p in predictions] == [(("d2", "M1"), 2.0, "ok"), (("d4", "M1"), 4.0, "ok")]


# -- nobody else reads the file -------------------------------------------------------------------------


def package_sources() -> dict[str, Path]:
    """Every module of the package by its import name (providers/ and prompts/ are mapped into it)."""
    found = {}
    for folder, package in ((REPO / "judgesdk", "judgesdk"), (REPO / "providers", "judgesdk.providers"), (REPO / "prompts", "judgesdk.prompts")):
        for path in sorted(folder.rglob("*.py")):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join([package, *parts])] = path
    return found


READS = {"read_text", "read_bytes", "read", "read_utf8"}


def _is_read(node: ast.AST, read_names: set[str]) -> bool:
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Attribute) and func.attr in READS) or (isinstance(func, ast.Name) and func.id in READS)
    return isinstance(node, ast.Name) and node.id in read_names


def json_lines_reading(source: str) -> list[str]:
    """Where ``source`` reads JSON (Lines) itself: a ``json.loads``/``json.load`` call (or of those names
    imported from json), ``model_validate_json`` inside a loop (one record per line), or a file's text cut
    into lines (``.splitlines()``/``.split("\\n")`` of a ``read_text()``/``read_bytes()``/``read()`` or of a
    name bound to one)."""
    tree = parse(source)
    from_json = {alias.asname or alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "json" for alias in node.names}
    read_names = {
        target.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Assign) and _is_read(node.value, set())
        for target in node.targets
        if isinstance(target, ast.Name)
    }
    loops = (ast.For, ast.AsyncFor, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
    in_loop = {id(inner) for node in ast.walk(tree) if isinstance(node, loops) for inner in ast.walk(node)}
    hits = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "json" and func.attr in ("loads", "load"):
            hits.append(f"line {node.lineno}: json.{func.attr}")
        elif isinstance(func, ast.Name) and func.id in from_json and func.id in ("loads", "load"):
            hits.append(f"line {node.lineno}: {func.id} (from json)")
        elif isinstance(func, ast.Attribute) and func.attr == "model_validate_json" and id(node) in in_loop:
            hits.append(f"line {node.lineno}: model_validate_json per line")
        elif isinstance(func, ast.Attribute) and _is_read(func.value, read_names):
            newline = func.attr == "split" and any(isinstance(a, ast.Constant) and a.value in ("\n", b"\n") for a in node.args)
            if func.attr == "splitlines" or newline:
                hits.append(f"line {node.lineno}: a file's text cut into lines")
    return hits


# Modules that may decode JSON or cut a file into lines, and why none of them reads a results file.
ALLOWED = {
    "judgesdk.records.rows": "the owner (results files, read_rows/parse_rows, and done_ids for older scripts)",
    "judgesdk.records.inputs": "the owner (read_objects, the strict JSONL reader of items, predictions and labels)",
    "judgesdk.meta.datasets": "human-annotation datasets (HumanRecord lines of ../shared/data), not a judge's results",
    "judgesdk.fused.model": "one JSON document: a fitted fused judge's weights",
    "judgesdk.cli.flags": "the JSON value of a `--option key=value` on the command line",
    "judgesdk.scorers.common": "a scorer's own record cache (export_jsonl / import_jsonl of its record type)",
    "judgesdk.providers.openai_batch": "the OpenAI Batch API's output file (the provider's responses), read by its adapter",
    "judgesdk.distributed.batches": "one input line's passthrough fields, carried through a Ray batch as JSON text",
    "judgesdk.provider.decisions": "a decision request's judged input, sent as one JSON object's text (OpenAI's input)",
    "judgesdk.serve.edge": "the body of one HTTP request to judgesdk serve, and its `input` text, checked before judging",
    "judgesdk.fused.overlap": "two JSON documents shipped in the package: the overlap rung's and the fallback's figures",
    "judgesdk.items.kinds": "a tool call's arguments, which OpenAI sends as one JSON object's text",
    "judgesdk.view.html": "the page's own item details, packed in chunks by the viewer (read back by its tests)",
    "judgesdk.view.load": "one JSON document beside a run: a judge card or a gate report",
}

# The commands that read a results file, and what each must take from judgesdk.records to do it: the one typed
# reader (read_results, a file or a Ray results folder), or the ledger a run appends to.
READERS = {
    "judgesdk.cli.score": {"Ledger"},  # score: resumes from, and appends to, its -o file
    "judgesdk.gate.run": {"Ledger", "read_results", "to_result"},  # gate: results read as is, or judged into
    "judgesdk.cli.gate": {"read_results"},  # gate label-slice over a results file
    "judgesdk.cli.card": {"Ledger", "read_results"},  # card: judges into -o, or reads --results
    "judgesdk.meta.card": {"read_results"},  # the card's figures from a results file
    "judgesdk.meta.diff": {"read_results"},  # diff: two results files
    "judgesdk.meta.bench": {"Ledger", "cell_id"},  # bench: predictions written; read back by meta.readers
    "judgesdk.meta.readers": {"read_predictions"},  # meta-eval: predictions (results) files
    "judgesdk.forecast.job": {"read_results"},  # forecast: what a resumed run has left to judge
}

# Every command that judges items into results does it through the one runner (judgesdk.judging.runner, through its
# folder's face): the same
# resume, the same row, the same budget stop and Ctrl-C.
RUNNER_USERS = {
    "judgesdk.cli.flags": {"run"},  # score and card, behind a progress bar (judge_rows)
    "judgesdk.cli.score": {"Task", "pending"},
    "judgesdk.cli.card": {"Task", "pending"},
    "judgesdk.gate.run": {"Task", "pending", "run"},
    "judgesdk.meta.bench": {"Task", "pending", "run"},
    "judgesdk.distributed.batches": {"Task", "run"},
}


def imports_from(source: str) -> dict[str, set[str]]:
    """Names imported by ``from <module> import <names>``, anywhere in ``source``, per module."""
    found: dict[str, set[str]] = {}
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.setdefault(node.module, set()).update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found.setdefault(alias.name, set())
    return found


def test_no_module_but_the_allowed_ones_reads_json_lines_itself():
    sources = package_sources()
    offenders = {name: hits for name, path in sources.items() if name not in ALLOWED and (hits := json_lines_reading(path.read_text(encoding="utf-8")))}
    assert not offenders, f"read results/prediction files through judgesdk.records: {offenders}"
    stale = [name for name in ALLOWED if name not in sources or not json_lines_reading(sources[name].read_text(encoding="utf-8"))]
    assert not stale, f"allowed but no longer reading JSON itself (drop them from ALLOWED): {stale}"


def test_the_check_finds_a_reader_of_its_own():
    """What meta-eval's reader was before records owned the file, and the other shapes of it."""
    assert json_lines_reading("import json\nrows = [json.loads(l) for l in path.read_text().splitlines()]\n")
    assert json_lines_reading("from json import loads\nrow = loads(line)\n")
    assert json_lines_reading("text = path.read_bytes()\nlines = text.split(b'\\n')\n")
    assert json_lines_reading("for line in lines:\n    Row.model_validate_json(line)\n")
    assert not json_lines_reading("answer = text.splitlines()[-1]\nmodel = Model.model_validate_json(path.read_text())\n")


# records' names for reading and writing rows: taken from judgesdk.records, never through another module
ROWS_API = {
    "read_rows", "parse_rows", "read_objects", "read_predictions", "parse_row", "latest", "Ledger", "row_for",
    "result_line", "join_key", "ResultRow", "read_utf8", "append", "done_ids",
}  # fmt: skip


def test_every_command_reading_results_takes_its_rows_from_records():
    assert ROWS_API <= set(dir(importlib.import_module("judgesdk.records")))  # a lazy face lists its names in dir()
    problems = []
    for name, path in package_sources().items():
        if name == "judgesdk.records" or name.startswith("judgesdk.records."):
            continue  # the records package's own modules
        imported = imports_from(path.read_text(encoding="utf-8"))
        for module, names in imported.items():
            if module.startswith("judgesdk") and module != "judgesdk.records" and names & ROWS_API:
                problems.append(f"{name} takes {sorted(names & ROWS_API)} from {module}, not judgesdk.records")
        missing = READERS.get(name, set()) - imported.get("judgesdk.records", set())
        if missing:
            problems.append(f"{name} reads results without {sorted(missing)} from judgesdk.records")
    assert not problems, problems


def test_every_command_that_judges_into_results_runs_the_one_runner():
    sources = package_sources()
    problems = []
    for name, needed in RUNNER_USERS.items():
        imported = imports_from(sources[name].read_text(encoding="utf-8")).get("judgesdk.judging", set())  # the face
        if needed - imported:
            problems.append(f"{name} judges into results without {sorted(needed - imported)} from judgesdk.judging (the runner's)")
    # nobody else writes result rows as they come: row_for is the runner's (and the offline/pairwise writers')
    writers = {
        name for name, path in sources.items()
        if "row_for" in imports_from(path.read_text(encoding="utf-8")).get("judgesdk.records", set())
    }  # fmt: skip
    allowed = {"judgesdk.judging.runner", "judgesdk.cli.card", "judgesdk.serve.record"}  # the runner; card's pairwise rows; served decisions (serve --record)
    assert not problems and writers <= allowed, (problems, sorted(writers - allowed))


def test_a_line_separator_inside_a_json_string_stays_in_its_line(tmp_path):
    """JSON allows U+2028/U+2029 unescaped inside strings (json.dumps(ensure_ascii=False) writes them so);
    the strict reader once cut lines with str.splitlines(), which splits there too, and refused the file."""
    from judgesdk.records import read_items

    path = tmp_path / "items.jsonl"
    output = "First line\u2028second\u2029third"
    path.write_text(json.dumps({"id": "a", "output": output}, ensure_ascii=False) + "\r\n" + json.dumps({"id": "b", "output": "x"}) + "\n", encoding="utf-8")
    items = read_items(path)
    assert [item.output for item, _ in items] == [output, "x"]
