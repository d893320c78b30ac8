"""The bill before the run (judgesdk.forecast.job): ``score --estimate`` and ``gate --estimate`` call no model, and
their counts are what a real run then records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import need

from judgesdk.cli.app import main
from judgesdk.core.types import Criterion, JudgeItem
from judgesdk.forecast.job import Beside, SpendMeter, forecast, label_paths
from judgesdk.forecast.kv_replay import KVReplay
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.protocol import Capabilities
from judgesdk.provider.stack import Extras
from judgesdk.providers.scripted import FULL, ScriptedProvider, ScriptedReply

REPO = Path(__file__).resolve().parents[2]
COHERENCE = Criterion(name="coherence", description="The summary is well-structured and well-organized.")
FLUENCY = Criterion(name="fluency", description="The summary reads naturally.")
SOURCES = ["The council voted to turn the rail yard into a park. " * 3, "A storm closed the harbour for two days. " * 2]


def items(n: int = 6) -> list[JudgeItem]:
    return [JudgeItem(output=f"summary {i}: the {'park' if i % 2 else 'storm'} story, told briefly", source=SOURCES[i // 3 % 2], id=str(i)) for i in range(n)]


def rule(request):
    """Label probabilities for label requests, token log-probabilities for continuations, a label for text."""
    if request.continuation is not None:
        return ScriptedReply(continuation_logprobs=[-1.5] * len(request.continuation.split()))
    if request.labels is not None:
        return ScriptedReply(label_probs={"2": 0.2, "3": 0.5, "4": 0.3})
    return "4"


def config(tmp_path: Path, **extra) -> object:
    return load_config({"cache": {"directory": str(tmp_path / "cache")}, **extra})


def run_for_real(cfg, provider, jobs) -> tuple[SpendMeter, list]:
    """The jobs judged for real on ``provider``, with what reached it metered under the cache."""
    meter = SpendMeter()
    judge = Judge.from_config(cfg, adapters=[provider], extras=Extras(meter=meter))
    try:
        results = [r for criterion, batch in jobs for r in judge.score_many(batch, criterion=criterion)]
    finally:
        judge.close()
    return meter, results


@pytest.mark.parametrize(
    ("method", "options"),
    [("likelihood", {}), ("likelihood", {"normalization": "ratio"}), ("geval", {}), ("mcq", {})],
)
def test_the_estimate_calls_no_model_and_its_counts_are_what_the_run_records(tmp_path, method, options):
    cfg = config(tmp_path, method=method, method_options=options)
    provider = ScriptedProvider(rule)
    jobs = [(COHERENCE, items())]
    found = forecast(cfg, jobs, adapters=[provider])
    assert provider.calls == []  # no model call
    planned = found.providers[0]
    meter, results = run_for_real(cfg, provider, jobs)
    spent = meter.usage[("scripted", "scripted")]
    assert all(r.status != "error" for r in results)
    assert planned.calls == len(provider.calls) == spent.calls
    assert planned.prompt_tokens == spent.input_tokens == sum(r.usage.input_tokens for r in results)
    assert planned.tokenizer.startswith("whitespace-separated words") and planned.tokens_exact
    if method == "likelihood":  # continuations: nothing generated, and the scripted provider writes nothing either
        assert planned.output_tokens == spent.output_tokens == 0 and planned.output_tokens_exact
        assert planned.by_kind == {"continuation": planned.calls}
    else:  # label requests (the scripted provider also writes its most likely label as text: one word each)
        assert planned.by_kind == {"labels": planned.calls}
    assert planned.usd == 0.0 and found.usd == 0.0 and planned.cache_hits == 0


def test_sampling_counts_n_samples_with_output_tokens_as_an_upper_bound(tmp_path):
    cfg = config(tmp_path, method="sampling", estimation={"samples": 5, "max_tokens": 3})
    one_each = ScriptedProvider(rule, capabilities=FULL.model_copy(update={"multiple_samples": False}))
    found = forecast(cfg, [(COHERENCE, items(4))], adapters=[one_each])
    planned = found.providers[0]
    assert planned.calls == 4 * 5 and one_each.calls == []  # one request per sample where n > 1 is not offered
    assert planned.output_tokens == 4 * 5 * 3 and not planned.output_tokens_exact
    meter, _ = run_for_real(cfg, one_each, [(COHERENCE, items(4))])
    spent = meter.usage[("scripted", "scripted")]
    assert spent.calls == planned.calls and spent.input_tokens == planned.prompt_tokens
    assert spent.output_tokens <= planned.output_tokens
    assert any("upper bound" in note for note in found.notes)
    several = forecast(cfg, [(COHERENCE, items(4))], adapters=[ScriptedProvider(rule)])  # n samples in one request
    assert several.providers[0].calls == 4 and several.providers[0].output_tokens == 4 * 5 * 3


def test_requests_in_the_cache_are_hits_and_cost_nothing(tmp_path):
    cfg = config(tmp_path, method="geval")
    provider = ScriptedProvider(rule)
    run_for_real(cfg, provider, [(COHERENCE, items(4))])
    calls = len(provider.calls)
    found = forecast(cfg, [(COHERENCE, items(6))], adapters=[provider])
    planned = found.providers[0]
    assert len(provider.calls) == calls  # still no call
    assert planned.cache_hits == 4 and planned.calls == 2 and planned.requests == 6
    run_for_real(cfg, provider, [(COHERENCE, items(6))])
    assert len(provider.calls) - calls == planned.calls


class Slow(ScriptedProvider):
    """Takes a moment to answer, as any model does (an instant answer is never in flight with another)."""

    async def generate(self, request):
        import asyncio

        await asyncio.sleep(0.01)
        return await super().generate(request)


def test_identical_requests_merge_in_flight_or_hit_the_runs_cache_as_in_a_run(tmp_path):
    twice = [*items(3), *items(3)]  # the same three items again (other ids, same requests)
    twice = [item.model_copy(update={"id": str(i)}) for i, item in enumerate(twice)]
    for cache_on, concurrency in ((True, 4), (False, 1), (False, 6)):
        cfg = load_config({"method": "geval", "concurrency": concurrency, "cache": {"enabled": cache_on, "directory": str(tmp_path / f"c{concurrency}")}})
        provider = Slow(rule)
        planned = forecast(cfg, [(COHERENCE, twice)], adapters=[provider]).providers[0]
        run_for_real(cfg, provider, [(COHERENCE, twice)])
        assert planned.calls == len(provider.calls), (cache_on, concurrency)
        assert planned.requests == 6 and planned.calls + planned.cache_hits + planned.merged == 6
    # without a cache and one item at a time, nothing answers a repeat: six calls
    assert planned.calls == 3 and planned.merged == 3  # the last case: all six in flight together


def test_several_criteria_share_what_they_can(tmp_path):
    cfg = config(tmp_path, method="likelihood")
    provider = ScriptedProvider(rule)
    jobs = [([COHERENCE, FLUENCY], items(4))]
    planned = forecast(cfg, jobs, adapters=[provider]).providers[0]
    meter, _ = run_for_real(cfg, provider, jobs)
    assert planned.calls == len(provider.calls) == 8 and planned.prompt_tokens == meter.usage[("scripted", "scripted")].input_tokens


def test_the_run_report_sets_the_estimate_beside_the_spend(tmp_path):
    cfg = config(tmp_path, method="likelihood")
    jobs = [(COHERENCE, items(4))]
    provider = ScriptedProvider(rule)
    found = forecast(cfg, jobs, adapters=[provider])
    from judgesdk.forecast.job import save

    save(found, tmp_path / "out.jsonl")
    beside = Beside.open(tmp_path / "out.jsonl")
    assert beside is not None and beside.saved == found
    judge = Judge.from_config(cfg, adapters=[provider], extras=Extras(meter=beside.meter))
    try:
        judge.score_many(jobs[0][1], criterion=COHERENCE)
        rows = dict(beside.rows(cfg, jobs)(judge))
        other = beside.rows(cfg, [(COHERENCE, items(3))])(judge)
    finally:
        judge.close()
    assert rows["  model calls"] == "4 estimated, 4 spent (+0.0%)"
    assert rows["  cache hits"] == "0 estimated, 0 spent" and rows["  cost"].startswith("$0.0000 estimated")
    assert "other items" in other[0][1]  # an estimate of another job is named, not compared
    assert Beside.open(tmp_path / "none.jsonl") is None


def test_an_unusable_provider_is_skipped_as_the_run_would(tmp_path):
    cfg = config(tmp_path, method="likelihood")

    def no_key():
        from judgesdk.core.errors import AuthError

        raise AuthError("no key", provider="openai")

    found = forecast(cfg, [(COHERENCE, items(2))], adapters=[no_key, ScriptedProvider(rule)])
    assert found.skipped and "no key" in found.skipped[0] and found.providers[0].provider == "scripted"


def test_a_method_the_provider_cannot_run_is_counted_as_failing(tmp_path):
    cfg = config(tmp_path, method="likelihood")
    no_likelihood = ScriptedProvider(rule, capabilities=Capabilities(logprobs=True, max_top_logprobs=5))
    found = forecast(cfg, [(COHERENCE, items(2))], adapters=[no_likelihood])
    assert found.failing == 2 and found.providers[0].calls == 0 and "error" in found.notes[-1]


# -- the local model's prefix reuse, replayed ---------------------------------------------------------


def test_the_replay_evaluates_a_shared_source_once_per_document():
    replay = KVReplay(reuse=True, states=4, n_swa=0, parallel=4, n_batch=512, n_ctx=4096)
    source = list(range(1, 301))  # BOS + source + "Summary:"
    outputs = [[1000 + i * 10 + k for k in range(20)] for i in range(3)]
    for output in outputs:
        replay.continuation(source, output)
    assert replay.evaluated == (len(source) - 1) + 3 * 20  # the source once, then each output and its join token
    no_reuse = KVReplay(reuse=False, states=4, n_swa=0, parallel=4, n_batch=512, n_ctx=4096)
    for output in outputs:
        no_reuse.continuation(source, output)
    assert no_reuse.evaluated == 3 * (len(source) - 1 + 20)


def test_the_replay_restores_a_saved_source_after_an_unconditional_pass():
    """The fused judge's order per output, conditional then unconditional: the source comes back from a saved
    state, also past a sliding window (the state is cut to what its family shares)."""
    for n_swa in (0, 128):
        replay = KVReplay(reuse=True, states=4, n_swa=n_swa, parallel=4, n_batch=512, n_ctx=4096)
        source, bare = list(range(1, 301)), [1, 7, 8]
        for i in range(3):
            output = [1000 + i * 50 + k for k in range(40)]
            replay.continuation(source, output)
            replay.continuation(bare, output)
        # past a sliding window the saved source is cut at a multiple of 64 positions (cells keep their SIMD
        # lanes when restored), so each of the two restores evaluates the rest of the source again
        realigned = 2 * ((len(source) - 1) % 64) if n_swa else 0
        assert replay.evaluated == (len(source) - 1) + 3 * 40 + 3 * (len(bare) - 1 + 40) + realigned, n_swa


def test_label_requests_that_differ_in_a_short_suffix_are_replayed_as_one_parallel_decode():
    """Four criteria of one output (prompts differing only in their last tokens): the shared prefix is evaluated once
    and each request's own tail once, as the provider's parallel label decode does."""
    replay = KVReplay(reuse=True, states=4, n_swa=0, parallel=4, n_batch=512, n_ctx=4096)
    shared = list(range(1, 101))
    prompts = [shared + [500 + i, 600 + i] for i in range(4)]
    assert replay.groups(prompts, [("1", "2")] * 4) == [[0, 1, 2, 3]]
    reused = replay.label_group(prompts, [()])
    assert reused == [0, 100, 100, 100] and replay.evaluated == 100 + 4 * 2


RULES = ("RESTORE_MIN_GAIN", "SAVE_MIN_DISCARD", "CELL_ALIGN", "ROW_GROUP", "PARALLEL_MAX_SUFFIX", "MIN_BATCH", "PAD_TOKEN")


def test_the_replay_and_the_local_provider_read_one_set_of_prefix_rules():
    """Neither the estimate's replay nor the provider's modules define a rule of their own (a number assigned to one
    of the rules' names, or their own label-path function): both read providers/llamacpp/rules.py, so a change to
    prefix reuse moves the estimate with it. Read from source: no llama-cpp-python needed."""
    import ast

    from judgesdk.providers.llamacpp import rules

    repo = Path(__file__).resolve().parents[2]
    readers = [repo / "judgesdk" / "forecast" / "kv_replay.py", *sorted((repo / "providers" / "llamacpp").glob("*.py"))]
    own = []
    for path in readers:
        if path.name == "rules.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            for target in targets:
                if isinstance(target, ast.Name) and target.id in RULES and isinstance(getattr(node, "value", None), ast.Constant):
                    own.append(f"{path.name}:{node.lineno}: {target.id} = {node.value.value}")  # type: ignore[union-attr]
            if isinstance(node, ast.FunctionDef) and node.name in ("label_paths", "maximal_paths", "common", "shared"):
                own.append(f"{path.name}:{node.lineno}: its own {node.name}()")
    assert not own, own
    assert [getattr(KVReplay, name) for name in RULES if hasattr(KVReplay, name)] == [getattr(rules, name) for name in RULES if hasattr(KVReplay, name)]
    encoded = {" 1": [5, 11], "1": [11], " 2": [5, 12], "2": [12], "one": [7, 8, 9]}
    assert label_paths(encoded) == rules.label_paths(encoded) == [(5,), (7, 8)]


def test_the_shared_rules_import_without_llama_cpp_or_numpy():
    import subprocess
    import sys

    code = "import sys; sys.modules['llama_cpp'] = None; sys.modules['numpy'] = None\nimport judgesdk.providers.llamacpp.rules"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_the_local_provider_keeps_the_rules_it_reads():
    prefix = need("judgesdk.providers.llamacpp.prefix")
    llamacpp = need("judgesdk.providers.llamacpp")
    from judgesdk.providers.llamacpp import rules

    assert (prefix.PrefixCache.RESTORE_MIN_GAIN, prefix.PrefixCache.SAVE_MIN_DISCARD) == (rules.RESTORE_MIN_GAIN, rules.SAVE_MIN_DISCARD)
    assert (prefix.CELL_ALIGN, prefix.ROW_GROUP, llamacpp.LlamaCppProvider.PARALLEL_MAX_SUFFIX) == (rules.CELL_ALIGN, rules.ROW_GROUP, rules.PARALLEL_MAX_SUFFIX)


# -- the command line ---------------------------------------------------------------------------------


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


HOSTED = ["--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"]  # built, never called: nothing listens there


def test_score_estimate_on_a_hosted_api_approximates_tokens_and_prices_them(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = write(tmp_path / "in.jsonl", [{"id": str(i), "output": f"a summary {i}", "source": "x" * 400} for i in range(3)])
    code = main(["score", str(path), *HOSTED, "--criterion", "coherence", "--estimate"])
    out, err = capsys.readouterr()
    found = json.loads(out)
    planned = found["providers"][0]
    assert code == 0 and planned["provider"] == "openai" and planned["calls"] == 3  # geval on top-logprobs: one call each
    assert planned["prompt_tokens"] > 3 * 100 and not planned["tokens_exact"] and "4 characters" in planned["tokenizer"]
    assert planned["output_tokens"] == 3 * 8 and planned["usd"] > 0 and "gpt-4o-mini" in planned["price_note"]
    assert "no model called" in err and "approximation" in err
    assert not (tmp_path / "cache").exists()  # an estimate creates no cache


def test_score_estimate_saves_beside_the_results_and_skips_what_is_done(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    path = write(tmp_path / "in.jsonl", [{"id": str(i), "output": f"a summary {i}", "source": "the source"} for i in range(3)])
    out = tmp_path / "out.jsonl"
    assert main(["score", str(path), *HOSTED, "--estimate", "-o", str(out), "--quiet"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert json.loads((tmp_path / "out.jsonl.estimate.json").read_text()) == first and not out.exists()
    from judgesdk.cli.app import build_parser
    from judgesdk.cli.score import _score_criteria
    from judgesdk.judging.judge_config import ask_for

    args = build_parser().parse_args(["score", str(path), *HOSTED])
    ask = ask_for(load_config({"providers": [{"kind": "openai", "base_url": "http://127.0.0.1:9/v1"}]}), _score_criteria(args))
    write(out, [{"id": "0", "score": 4.0, "status": "ok", "asked": ask.key}])
    assert main(["score", str(path), *HOSTED, "--estimate", "-o", str(out), "--quiet"]) == 0
    assert json.loads(capsys.readouterr().out)["providers"][0]["calls"] == 2  # item 0 is done


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--method", "nope"], "unknown method"), (["--scale", "five"], "--scale"), (["--provider", "nope"], "nope")],
)
def test_score_estimate_bad_input_exits_3(tmp_path, capsys, argv, message):
    path = write(tmp_path / "in.jsonl", [{"output": "x", "source": "y"}])
    code = main(["score", str(path), "--estimate", *argv])
    assert code == 3 and message in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text("{not json")
    assert main(["score", str(tmp_path / "bad.jsonl"), "--estimate", *HOSTED]) == 3


# -- the gate ------------------------------------------------------------------------------------------


def gate_file(tmp_path: Path) -> Path:
    write(tmp_path / "items.jsonl", [{"id": str(i), "output": f"answer {i}", "source": "the source"} for i in range(4)])
    items_path, results, cache = tmp_path / "items.jsonl", tmp_path / "results.jsonl", tmp_path / "cache"
    (tmp_path / "gate.toml").write_text(
        f'input = "{items_path}"\nresults = "{results}"\n'
        f'judge = {{ providers = [{{ kind = "openai", base_url = "http://127.0.0.1:9/v1" }}], cache = {{ directory = "{cache}" }} }}\n'
        '[budget]\nmax_tokens = 10\n'
        '[[criteria]]\nname = "coherence"\n[[criteria]]\nname = "fluency"\n'
        '[[gates]]\ncriterion = "coherence"\nkind = "mean"\nmin = 3\n'
    )
    return tmp_path / "gate.toml"


def test_gate_estimate_plans_each_criterion_against_the_budget(tmp_path, capsys, monkeypatch):
    from judgesdk.gate import load_gate_config
    from judgesdk.gate.run import estimate

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    config = load_gate_config(gate_file(tmp_path))
    provider = ScriptedProvider(rule)
    found = estimate(config, providers=[provider])
    assert provider.calls == [] and found.criteria == ["coherence", "fluency"]
    assert found.items == 4 and found.judgements == 8 and found.providers[0].calls == 8
    assert "OVER the cap of 10" in found.notes[-1]
    write(tmp_path / "results.jsonl", [{"id": "0", "criterion": "coherence", "score": 4.0, "status": "ok"}])  # done before
    assert estimate(config, providers=[provider]).judgements == 7
    code = main(["gate", "--config", str(tmp_path / "gate.toml"), "--estimate", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["providers"][0]["provider"] == "openai" and out["judgements"] == 7
    assert main(["gate", "--config", str(tmp_path / "gate.toml"), "--estimate"]) == 0
    assert "gate --estimate" in capsys.readouterr().out
    assert main(["gate", "--config", str(tmp_path / "gate.toml"), "--estimate", "--results", str(tmp_path / "results.jsonl")]) == 3
    assert "judges nothing" in capsys.readouterr().err


# -- with the embedded model ---------------------------------------------------------------------------


def summeval_like(n_docs: int = 1, per_doc: int = 6) -> list[JudgeItem]:
    """The first SummEval document's outputs in natural text (as `judgesdk bench` judges them), where the shared
    data is here, after the two example articles: long sources, past the model's sliding window."""
    chosen = [JudgeItem(**{k: v for k, v in json.loads(line).items() if k in ("id", "output", "source")}) for line in (REPO / "examples" / "summaries.jsonl").read_text().splitlines()]
    from judgesdk.meta.datasets import shared_data_dir

    if shared_data_dir() is not None:
        from judgesdk.meta import bench
        from judgesdk.meta.datasets import load_dataset
        from judgesdk.meta.naturalize import natural

        records = bench.select(load_dataset("summeval"), docs=n_docs)[:per_doc]
        chosen += [bench.item_of(natural(r)) for r in records]
    return chosen[:12]


@pytest.mark.integration
def test_the_estimate_predicts_the_local_models_evaluated_tokens(gguf_path, tmp_path):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    provider = LlamaCppProvider(gguf_path, model_name="gemma3-270m-q4_k_m")  # fresh: an empty KV cache, zero counters
    cfg = load_config({"cache": {"enabled": False}})
    jobs = [([COHERENCE, FLUENCY], summeval_like())]
    try:
        found = forecast(cfg, jobs, adapters=[provider])
        assert provider.counters.requests == 0  # no model call
        planned = found.providers[0]
        judge = Judge.from_config(cfg, adapters=[provider])
        try:
            results = judge.score_many(jobs[0][1], criterion=jobs[0][0])
        finally:
            judge.close()
        counters = provider.counters
    finally:
        import asyncio

        asyncio.run(provider.aclose())
    assert all(r.method == "fused/fine-grained" for r in results)
    assert planned.calls == counters.requests and planned.merged == planned.calls  # two criteria share every signal
    assert planned.prompt_tokens == counters.prompt_tokens
    assert planned.tokens_evaluated == pytest.approx(counters.tokens_evaluated, rel=0.10)
    assert planned.tokens_reused == pytest.approx(counters.tokens_reused, rel=0.10)


@pytest.mark.integration
def test_score_reports_the_estimate_beside_what_it_spent(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    out = tmp_path / "out.jsonl"
    argv = ["score", str(REPO / "examples" / "summaries.jsonl"), "--config", str(REPO / "examples" / "local.toml"), "--criterion", "consistency", "-o", str(out)]
    assert main([*argv, "--estimate", "--quiet"]) == 0
    planned = json.loads(capsys.readouterr().out)["providers"][0]
    assert not (tmp_path / "cache").exists() and planned["calls"] == 12  # conditional and unconditional per output
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert "estimate vs spent" in err
    line = next(row for row in err.splitlines() if "tokens evaluated" in row and "estimated" in row)
    assert f"{planned['tokens_evaluated']:,} estimated, {planned['tokens_evaluated']:,} spent" in line
