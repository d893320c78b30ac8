"""Wrong or stuck verdicts (issue 29, items 1-12 but 3 and 9): what the catalogue's rows
(tests/catalogue/test_hostile_input.py) cannot show in one command.

A failing gate piped into ``head`` keeps its exit code under ``pipefail`` (a real pipe, several runs); a 200 that is
no answer is retried and never cached, so a later run into a new ``-o`` asks again (``direct``, ``geval``,
``sampling``); probabilities sent as logprobs never become a score; ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL``
never send the vendor's key anywhere; the library-level checks behind the catalogue's rows.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

from judgesdk.core.errors import ConfigError, InputError, MalformedAnswerError
from judgesdk.gate.gate_config import load_gate_config
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.layers.answers import answer_problem
from judgesdk.provider.layers.cache import cache_stats
from judgesdk.provider.protocol import Choice, GenerateRequest, GenerateResponse, Message, TokenLogprob, TopLogprob
from judgesdk.provider.settings import ProviderConfig
from judgesdk.provider.stack import StackPlan, assemble, build_adapter
from judgesdk.records.inputs import item_ids

from support.batch_server import BatchServer
from support.hostile import CLEARED_ENV, SECRET, run

ENTRY = "import sys; from judgesdk.cli.app import main; sys.exit(main())"


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in (*CLEARED_ENV, "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE", "JUDGESDK_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))


# -- item 1: a closed pipe never turns a failed gate into a pass ------------------------------------------------


def _gate_files(tmp_path: Path, score: int, gates: int) -> tuple[Path, Path]:
    """Results with every score ``score`` and ``gates`` mean gates (min 3) with long names: their report is larger
    than a pipe's buffer (64 KiB), so ``head`` closes the pipe while the gate is still writing."""
    results = tmp_path / f"results-{score}.jsonl"
    results.write_text("".join(json.dumps({"id": str(i), "score": score, "status": "ok", "criterion": "c", "method": "direct"}) + "\n" for i in range(10)))
    body = "".join(f'[[gates]]\nname = "mean gate {i} {"x" * 200}"\nkind = "mean"\ncriterion = "c"\nmin = 3\n' for i in range(gates))
    config = tmp_path / f"gate-{gates}.toml"
    config.write_text('[[criteria]]\nname = "c"\nscale = "1-5"\n' + body)
    return config, results


def _piped(config: Path, results: Path, reader: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    command = f"{sys.executable} -c {json.dumps(ENTRY)} gate --config {config} --results {results} | {reader}"
    return subprocess.run(["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, env=env, timeout=120)


@pytest.mark.parametrize("gates", [400, 1], ids=["report-larger-than-a-pipe", "one-line-report"])
def test_a_failing_gate_piped_into_head_keeps_its_exit_code(tmp_path, gates):
    config, failing = _gate_files(tmp_path, score=1, gates=gates)
    for _ in range(5):  # the reader leaves at a different moment each run
        done = _piped(config, failing, "head -1")
        assert done.returncode == 1, (done.returncode, done.stderr[-500:])
        assert done.stdout.startswith("judgesdk gate: FAIL") and "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr, done.stderr
    _, passing = _gate_files(tmp_path, score=5, gates=gates)
    for _ in range(2):
        done = _piped(config, passing, "head -1")
        assert done.returncode == 0 and done.stdout.startswith("judgesdk gate: PASS"), (done.returncode, done.stderr[-500:])
    assert _piped(config, failing, "cat > /dev/null").returncode == 1  # a reader that reads it all: the same code


def test_a_reader_leaving_drops_the_rest_of_the_output_only():
    """The guard the CLI puts on stdout: the first broken write drops the rest quietly, and the command's code stands."""
    from judgesdk.cli.app import _ReaderMayLeave

    class Closed:
        written = ""

        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

    guarded = _ReaderMayLeave(Closed())
    assert guarded.write("verdict\n") == len("verdict\n") and guarded.reader_left
    guarded.flush()  # no error: nothing more to say to a reader that left


# -- item 2: a 200 that is no answer is an error, retried, never cached --------------------------------------------

BROKEN = {
    "error body": {"error": {"message": "upstream overloaded", "type": "server_error"}},
    "empty choices": {"id": "c", "object": "chat.completion", "choices": []},
    "a JSON array": [{"message": {"role": "assistant", "content": "5"}}],
    "choices as an object": {"choices": {"0": {"message": {"role": "assistant", "content": "5"}}}},
    "a choice without a message": {"choices": [{"index": 0, "text": "5"}]},
}
GOOD = {"text": "4", "top_logprobs": {"1": math.log(0.05), "2": math.log(0.05), "3": math.log(0.1), "4": math.log(0.6), "5": math.log(0.2)}}


class Switch:
    """A server's answers: broken until ``fixed``."""

    def __init__(self, broken):
        self.broken, self.fixed = broken, False

    def __call__(self, body):
        return GOOD if self.fixed else {"body": self.broken}


def _served(tmp_path: Path, server: BatchServer, method: str) -> Path:
    config = tmp_path / f"{method}.toml"
    config.write_text(
        f'method = "{method}"\n[estimation]\nsamples = 3\n[retry]\nmax_attempts = 2\ninitial_wait_s = 0\n'
        f'[[providers]]\nkind = "openai"\nmodel = "m"\nbase_url = "{server.openai_base_url}"\n'
    )
    return config


@pytest.mark.parametrize("method", ["direct", "geval", "sampling"])
@pytest.mark.parametrize("broken", list(BROKEN), ids=list(BROKEN))
def test_a_malformed_200_is_a_retried_error_and_never_cached(broken, method, tmp_path, items, capsys):
    need("openai")
    answers = Switch(BROKEN[broken])
    with BatchServer(answers) as server:
        config = _served(tmp_path, server, method)
        code, _, err = run(["score", items, "--config", config, "-o", tmp_path / "first.jsonl", "--quiet"], capsys)
        row = json.loads((tmp_path / "first.jsonl").read_text().splitlines()[0])
        assert code == 2 and row["status"] == "error" and row["score"] is None, (err, row)
        assert "malformed" in row["error"] or "answered 200" in row["error"] or "no completion choice" in row["error"], row["error"]
        asked = len(server.seen("POST", "/v1/chat/completions"))
        assert asked >= 2  # retried
        assert cache_stats(tmp_path / "cache")["entries"] == 0  # nothing of it was stored
        answers.fixed = True  # the server recovers: a new run, into a new file, asks again and scores
        code, _, err = run(["score", items, "--config", config, "-o", tmp_path / "second.jsonl", "--quiet"], capsys)
        row = json.loads((tmp_path / "second.jsonl").read_text().splitlines()[0])
        assert code == 0 and row["status"] in ("ok", "low_coverage") and row["score"] is not None, (err, row)
        assert len(server.seen("POST", "/v1/chat/completions")) > asked
        code, _, err = run(["score", items, "--config", config, "-o", tmp_path / "first.jsonl", "--quiet"], capsys)
        assert code == 0, err  # the error row of the first run is judged again on resume


@pytest.mark.parametrize(
    "top",
    [
        {"1": 0.05, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.25},  # probabilities where logprobs belong: read as such, 3.17
        dict.fromkeys("12345", 5.0),  # every logprob +5: read as such, 3.0 at full coverage
        dict.fromkeys("12345", float("nan")),
        {"1": -1.0, "2": -1.0, "3": float("inf"), "4": -1.0, "5": -1.0},
    ],
    ids=["probabilities", "all-plus-five", "nan", "plus-inf"],
)
def test_logprobs_that_are_no_log_probabilities_are_never_a_score(top, tmp_path, items, capsys):
    need("openai")
    with BatchServer(lambda body: {"text": "4", "top_logprobs": top}) as server:
        code, out, err = run(["score", items, "--config", _served(tmp_path, server, "geval"), "--quiet"], capsys)
    row = json.loads(out.splitlines()[0])
    assert code == 2 and row["status"] == "error" and row["score"] is None and row["distribution"] is None, (err, row)
    assert "log-probability" in row["error"], row["error"]
    assert cache_stats(tmp_path / "cache")["entries"] == 0


def _request(**fields) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content="x"),), **fields)


def test_answer_problem_names_what_makes_an_answer_none():
    text = _request(top_logprobs=5)
    token = lambda lp, tops=(): TokenLogprob(token="4", logprob=lp, top=[TopLogprob(token=t, logprob=v) for t, v in tops])  # noqa: E731
    assert answer_problem(text, GenerateResponse(choices=[])) == "no choices in the answer"
    assert answer_problem(text, GenerateResponse(choices=[Choice(text="4", tokens=[token(-0.1, [("4", -0.1), ("3", -2.4)])])])) is None
    assert answer_problem(text, GenerateResponse(choices=[Choice(text="4", tokens=[token(-1e-6)])])) is None  # float32 rounding
    assert answer_problem(text, GenerateResponse(choices=[Choice(text="4", tokens=[token(-1.0, [("4", -math.inf)])])])) is None
    assert "above 0" in answer_problem(text, GenerateResponse(choices=[Choice(text="4", tokens=[token(-0.2, [("3", 0.3)])])]))
    assert "NaN" in answer_problem(text, GenerateResponse(choices=[Choice(text="4", tokens=[token(math.nan)])]))
    labels = _request(labels=("1", "2"))
    assert answer_problem(labels, GenerateResponse()) == "no label log-probabilities in the answer"
    assert "label '2'" in answer_problem(labels, GenerateResponse(label_logprobs={"1": -0.1, "2": 0.7}))
    scored = _request(continuation="a b")
    assert answer_problem(scored, GenerateResponse(continuation_tokens=[TokenLogprob(token="a", logprob=-1.0)])) is None
    assert "continuation" in answer_problem(scored, GenerateResponse(continuation_tokens=[TokenLogprob(token="a", logprob=2.0)]))


def test_the_stack_raises_a_malformed_answer_below_the_retry_and_the_cache(tmp_path):
    calls = []

    class Empty:
        kind, model, endpoint = "stub", "m", "in-process"
        from judgesdk.providers.scripted import FULL as capabilities

        async def generate(self, request):
            calls.append(request)
            return GenerateResponse(choices=[])

        async def aclose(self):
            return None

    plan = load_config({"retry": {"max_attempts": 3, "initial_wait_s": 0}, "cache": {"directory": str(tmp_path / "c")}}).stack_plan()
    stack = assemble(Empty(), plan)

    async def ask():
        with pytest.raises(Exception) as raised:
            await stack.generate(_request())
        return raised.value

    error = asyncio.run(ask())
    assert isinstance(error.last, MalformedAnswerError) and len(calls) == 3, (error, len(calls))
    assert cache_stats(tmp_path / "c")["entries"] == 0
    bare = assemble(Empty(), StackPlan(retry=None, overload=None, cache=None, coalesce=False))
    with pytest.raises(MalformedAnswerError, match="no choices"):
        asyncio.run(bare.generate(_request()))


# -- item 4: the endpoint is judgesdk's to decide, never an SDK's environment variable's ------------------------


@pytest.mark.parametrize("variable", ["OPENAI_BASE_URL", "OPENAI_API_BASE"])
def test_openai_base_url_in_the_environment_never_gets_the_vendor_key(variable, monkeypatch, caplog):
    need("openai")
    with BatchServer(lambda body: "4") as server:
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv(variable, server.openai_base_url)
        adapter = build_adapter(ProviderConfig(kind="openai"))
        assert str(adapter.client.base_url).startswith("https://api.openai.com/v1") and adapter.endpoint == "https://api.openai.com/v1"
        for config in ({"kind": "openai", "model": "m"}, {"kind": "litellm", "model": "openai/m"}):
            if config["kind"] == "litellm" and not _has("litellm"):
                continue
            _judge_once(config, monkeypatch)  # the vendor's host cannot be reached here: an error, never a call to the server
        assert server.requests == [], [r.path for r in server.requests]


def test_anthropic_base_url_in_the_environment_never_gets_the_vendor_key(monkeypatch):
    need("anthropic")
    with BatchServer(lambda body: "4") as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.origin)
        adapter = build_adapter(ProviderConfig(kind="anthropic"))
        assert str(adapter.client.base_url).startswith("https://api.anthropic.com") and adapter.endpoint == "https://api.anthropic.com"
        _judge_once({"kind": "anthropic", "model": "claude-test"}, monkeypatch)
        if _has("litellm"):
            monkeypatch.setenv("ANTHROPIC_API_BASE", server.origin)
            _judge_once({"kind": "litellm", "model": "anthropic/claude-test"}, monkeypatch)
        assert server.requests == [], [r.path for r in server.requests]


def test_a_litellm_route_whose_base_url_only_the_environment_names_is_refused(monkeypatch):
    need("litellm")
    from judgesdk.core.errors import PermanentError

    monkeypatch.setenv("GROQ_API_KEY", SECRET)
    monkeypatch.setenv("GROQ_API_BASE", "http://127.0.0.1:9/v1")
    with pytest.raises(PermanentError, match="GROQ_API_BASE is set in the environment") as raised:
        build_adapter(ProviderConfig(kind="litellm", model="groq/llama-3"))
    assert SECRET not in str(raised.value)
    build_adapter(ProviderConfig(kind="litellm", model="groq/llama-3", base_url="http://127.0.0.1:9/v1"))  # named in the config: fine


def _has(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


def _judge_once(provider: dict, monkeypatch) -> None:
    """One judgement whose provider cannot be reached (the vendor's host, offline here), quickly given up."""
    from judgesdk.judging.judge import Judge

    config = {"providers": [{**provider, "timeout_s": 5}], "method": "direct", "cache": {"enabled": False}, "retry": {"max_attempts": 1}}
    with Judge.from_config(config) as judge:
        result = judge.score("The council approved a park.", source="The city council approved a new park.", criterion="coherence")
    assert result.status == "error" and SECRET not in (result.error or "")


# -- item 5: a gate threshold off its criterion's scale decides nothing: a config error -------------------------


def _gate(tmp_path: Path, criteria: str, gates: str) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(f'results = "r.jsonl"\n{criteria}{gates}')
    return path


@pytest.mark.parametrize(
    "gate, says",
    [
        ('kind = "mean"\nmin = 0.35', "min = 0.35 is outside criterion 'c''s scale 1-10"),
        ('kind = "ci_lower"\nmin = 11', "min = 11 is outside"),
        ('kind = "pass_rate"\nitem_min = 0\nmin = 0.5', "item_min = 0 is outside"),
        ('kind = "regression"\nmax_drop = 9.5', "max_drop = 9.5 is more than criterion 'c''s scale 1-10 spans (9)"),
        ('kind = "ppi_ci_lower"\nmin = -1', "min = -1 is outside"),
        ('kind = "corrected_pass_rate"\nitem_min = 12\nmin = 0.5', "item_min = 12 is outside"),
        ('kind = "corrected_pass_rate"\nitem_min = 5\njudge_item_min = 0.2\nmin = 0.5', "judge_item_min = 0.2 is outside"),
        ('kind = "ppi_regression"\nmax_drop = 10', "max_drop = 10 is more than"),
    ],
)
def test_a_threshold_off_the_scale_is_a_config_error_naming_it(gate, says, tmp_path):
    criteria = '[[criteria]]\nname = "c"\nscale = "1-10"\nlabels = "l.jsonl"\nbaseline_labels = "b.jsonl"\n'
    with pytest.raises(ConfigError, match="gate 'g'") as raised:
        load_gate_config(_gate(tmp_path, criteria, f'[[gates]]\nname = "g"\ncriterion = "c"\n{gate}\n'))
    assert says in str(raised.value), str(raised.value)
    on_scale = gate.replace("0.35", "3").replace("= 11", "= 9").replace("item_min = 0\n", "item_min = 4\n").replace("9.5", "2")
    on_scale = on_scale.replace("= -1", "= 4").replace("item_min = 12", "item_min = 5").replace("judge_item_min = 0.2", "judge_item_min = 6").replace("= 10", "= 1")
    load_gate_config(_gate(tmp_path, criteria, f'[[gates]]\nname = "g"\ncriterion = "c"\n{on_scale}\n'))  # the same gate on the scale


def test_labels_off_an_open_scale_and_calibrated_scores_are_checked_against_their_own_scale(tmp_path):
    open_scale = '[[criteria]]\nname = "c"\nscale = "1-5"\nlabels = "l.jsonl"\nopen_scale = true\n'
    load_gate_config(_gate(tmp_path, open_scale, '[[gates]]\nname = "g"\ncriterion = "c"\nkind = "ppi_ci_lower"\nmin = 40\n'))  # labels may lie anywhere
    from judgesdk.gate.run import collect
    from judgesdk.meta.calibration import Calibration, FitReport

    fit = FitReport(n_items=12, folds=3, seed=0, spearman=0.9, pearson=0.9, mae=1.0, raw_spearman=0.9, raw_pearson=0.9, raw_mae=2.0)
    calibration = Calibration(method="linear", dimension="quality", slope=20.0, intercept=0.0, low=20.0, high=100.0, fit=fit)
    (tmp_path / "cal.json").write_text(calibration.model_dump_json())
    (tmp_path / "r.jsonl").write_text('{"id": "1", "score": 3, "status": "ok", "criterion": "c", "method": "direct"}\n')
    calibrated = '[[criteria]]\nname = "c"\nscale = "1-5"\ncalibration = "cal.json"\n'
    config = load_gate_config(_gate(tmp_path, calibrated, '[[gates]]\nname = "g"\ncriterion = "c"\nkind = "mean"\nmin = 60\n'))
    assert collect(config).criteria["c"].calibration is not None  # 60 is on the human scale the calibration maps onto
    config = load_gate_config(_gate(tmp_path, calibrated, '[[gates]]\nname = "g"\ncriterion = "c"\nkind = "mean"\nmin = 3\n'))
    with pytest.raises(ConfigError, match="min = 3 is outside the human scale of calibration .*cal.json 20-100"):
        collect(config)


# -- item 6: every section typed; the environment's yes and no --------------------------------------------------


@pytest.mark.parametrize(
    "config, says",
    [
        ({"retry": {"max_attemps": 3}}, "retry.max_attemps: unknown field (did you mean 'max_attempts'?)"),
        ({"estimation": {"temprature": 0.5}}, "estimation.temprature: unknown field (did you mean 'temperature'?)"),
        ({"overload": {"enabeld": False}}, "overload.enabeld: unknown field (did you mean 'enabled'?)"),
        ({"cache": {"ttl": 5}}, "cache.ttl: unknown field (did you mean 'ttl_s'?)"),
        ({"providers": [{"kind": "openai", "rate_limit": {"rpm": 5}}]}, "providers.0.rate_limit.rpm: unknown field"),
        ({"jury": {"judges": [{"name": "a"}, {"name": "b"}], "agregate": "mean"}}, "jury.agregate: unknown field (did you mean 'aggregate'?)"),
    ],
)
def test_a_typo_in_any_section_of_the_judge_config_is_named_with_its_fix(config, says):
    with pytest.raises(ConfigError) as raised:
        load_config(config)
    assert says in str(raised.value), str(raised.value)


def test_a_typo_in_a_gate_budget_would_have_left_the_cap_unapplied(tmp_path):
    base = '[[criteria]]\nname = "c"\n[[gates]]\nname = "m"\nkind = "mean"\ncriterion = "c"\nmin = 3\n'
    with pytest.raises(ConfigError, match=r"budget.max_usdd: unknown field \(did you mean 'max_usd'\?\)"):
        load_gate_config(_gate(tmp_path, "[budget]\nmax_tokens = 100\nmax_usdd = 0.5\n", base))
    with pytest.raises(ConfigError, match=r"budget.prices.usd_per_milion_input: unknown field"):
        load_gate_config(_gate(tmp_path, "[budget]\nmax_usd = 1\n[budget.prices]\nusd_per_milion_input = 2\n", base))
    assert load_gate_config(_gate(tmp_path, "[budget]\nmax_usd = 0.5\n", base)).budget.max_usd == 0.5


@pytest.mark.parametrize("value", ["1", "true", "TRUE", "True", "yes", "on", "ON", " y "])
def test_judgesdk_no_cache_reads_the_usual_yes(value, monkeypatch):
    monkeypatch.setenv("JUDGESDK_NO_CACHE", value)
    assert load_config({}).cache.enabled is False


@pytest.mark.parametrize("value", ["0", "false", "no", "off", ""])
def test_judgesdk_no_cache_reads_the_usual_no(value, monkeypatch):
    monkeypatch.setenv("JUDGESDK_NO_CACHE", value)
    assert load_config({}).cache.enabled is True


@pytest.mark.parametrize("variables", [{"JUDGESDK_MODEL": "m"}, {"JUDGESDK_BASE_URL": "http://127.0.0.1:9/v1"}, {"JUDGESDK_API": "completions"}])
def test_provider_variables_without_judgesdk_provider_say_what_to_do(variables, monkeypatch):
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(ConfigError, match="set but JUDGESDK_PROVIDER is not: .*set it too"):
        load_config({"providers": [{"kind": "openai", "model": "gpt-4o-mini"}]})
    monkeypatch.setenv("JUDGESDK_PROVIDER", "openai")
    assert load_config({}).providers[0].kind == "openai"


def test_a_template_is_refused_when_loaded_without_its_output_or_with_an_unknown_key(tmp_path):
    from judgesdk.judging.judge import Judge
    from judgesdk.prompting.templates import parse_template
    from judgesdk.providers.scripted import ScriptedProvider

    with pytest.raises(InputError, match=r"unknown key 'sytem' \(did you mean 'system'\?"):
        parse_template(b'id = "t"\nversion = "1"\nsytem = "You judge."\nuser = "{{output}}"\n', "t.toml")
    blind = tmp_path / "blind.toml"
    blind.write_text('id = "blind"\nversion = "1"\nuser = "Rate the answer from 1 to 5."\n')
    with pytest.raises(InputError, match=r"template 'blind' has no \{\{output\}\}"):
        Judge(ScriptedProvider(lambda r: "5"), template=blind, method="direct")
    pair = tmp_path / "pair.toml"
    pair.write_text('id = "pair"\nversion = "1"\nuser = "A: {{output_a}}\\nB: {{output_b}}\\nWhich is better?"\n')
    Judge(ScriptedProvider(lambda r: "A"), template=pair, method="direct").close()  # a comparison shows both outputs
    scored = tmp_path / "scored.toml"
    scored.write_text('id = "likely"\nversion = "1"\nuser = "A {{criterion}} text about {{source}}:"\n')
    Judge(ScriptedProvider(lambda r: "5"), template=scored, method="likelihood").close()  # the output is the continuation


# -- item 7: -o is a results file, never the input ---------------------------------------------------------------


def test_the_input_reached_through_a_link_is_the_input_too(tmp_path, items, capsys):
    link = tmp_path / "link.jsonl"
    link.symlink_to(items)
    code, out, err = run(["score", items, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet", "-o", link], capsys)
    assert code == 3 and "is the input file" in err and out == ""
    assert Path(items).read_text().count("\n") == 1  # nothing was appended


# -- item 11: an explicit id never equals another line's derived one ---------------------------------------------


def test_ids_written_as_another_lines_derived_id_are_refused():
    from judgesdk.records.inputs import content_hash

    second = {"output": "A second item."}
    derived = f"sha:{content_hash(second)}"
    assert item_ids([(1, {"output": "x"}), (2, second)]) == [f"sha:{content_hash({'output': 'x'})}", derived]
    with pytest.raises(InputError, match=f"line 1 has the id '{derived}', which is the id line 2 gets"):
        item_ids([(1, {"id": derived, "output": "A first item."}), (2, second)])
    with pytest.raises(InputError, match=f"line 3 has the id '{derived}#2'"):
        item_ids([(1, second), (2, second), (3, {"id": f"{derived}#2", "output": "other"})])


def test_a_decision_request_is_answered_by_decisions_not_choices():
    from judgesdk.provider.decisions import DecisionAnswer, DecisionInput, DecisionRequest, Level, ScoreQuestion

    question = ScoreQuestion(name="coherence", instructions="How coherent is it?", levels=tuple(Level(label=str(v)) for v in (1, 2, 3)))
    asked = GenerateRequest(messages=[], decision=DecisionRequest(input=DecisionInput(output="A text."), questions=(question,)))
    assert answer_problem(asked, GenerateResponse(choices=[])) == "no decision answers in the answer"
    refused = DecisionAnswer(name="coherence", status="refused", reason="no")
    assert answer_problem(asked, GenerateResponse(choices=[], decisions=[refused])) is None
