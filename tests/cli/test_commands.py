import json
import re
from pathlib import Path

import pytest

from judgesdk.cli.app import main

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def run(argv, capsys):
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    "content,message",
    [("{not json", "not valid JSON"), ('{"source": "x"}', "'output' field"), ('{"output": "  "}', "empty output"), ("", "is empty")],
)
def test_bad_input_exits_3_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "in.jsonl"
    path.write_text(content)
    code, _, err = run(["score", str(path), "--provider", "local"], capsys)
    assert code == 3 and message in err


def test_missing_file_and_bad_scale(tmp_path, capsys):
    code, _, err = run(["score", str(tmp_path / "none.jsonl")], capsys)
    assert code == 3 and "does not exist" in err
    (tmp_path / "in.jsonl").write_text('{"output": "x"}\n')
    code, _, err = run(["score", str(tmp_path / "in.jsonl"), "--scale", "five"], capsys)
    assert code == 3 and "--scale" in err


def test_bad_config_exits_3(tmp_path, capsys):
    (tmp_path / "in.jsonl").write_text('{"output": "x"}\n')
    (tmp_path / "judge.toml").write_text('[[providers]]\nkind = "nope"\n')
    code, _, err = run(["score", str(tmp_path / "in.jsonl"), "--config", str(tmp_path / "judge.toml")], capsys)
    assert code == 3 and "invalid judgesdk config" in err


@pytest.mark.integration
def test_readme_command_scores_the_example_on_the_embedded_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    argv = ["score", str(EXAMPLES / "summaries.jsonl"), "--config", str(EXAMPLES / "local.toml"), "--criterion", "consistency"]
    code, out, err = run(argv, capsys)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 6
    for line in lines:  # the default method (auto) judges consistency of a summary with the fused judge
        assert line["method"] == "fused/source" and line["distribution"] is None
        assert 1 <= line["score"] <= 5 and line["status"] == "ok"
        assert line["details"]["interval"][0] <= line["score"] <= line["details"]["interval"][1]
        assert line["doc_id"] and line["system_id"] and not line["cached"]
    assert "model tokens evaluated" in err and "x the" in err and "unique" in err  # the run's reuse report
    assert_readme_figures(lines)
    code, out, err = run(argv, capsys)  # the second identical run: every answer from the cache
    assert code == 0 and all(json.loads(line)["cached"] for line in out.splitlines())
    assert "model tokens evaluated" not in err  # the model never ran


@pytest.mark.integration
def test_output_file_resumes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    source = tmp_path / "in.jsonl"
    lines = (EXAMPLES / "summaries.jsonl").read_text().splitlines()
    source.write_text("\n".join(lines[:2]) + "\n")
    out = tmp_path / "out.jsonl"
    argv = ["score", str(source), "--provider", "local", "--criterion", "consistency", "-o", str(out), "--quiet"]
    assert main(argv) == 0
    source.write_text("\n".join(lines[:4]) + "\n")
    assert main(argv) == 0
    ids = [json.loads(line)["id"] for line in out.read_text().splitlines()]
    assert ids[:2] == ["marlow:good", "marlow:partial"] and sorted(ids) == sorted(json.loads(x)["id"] for x in lines[:4])


@pytest.mark.integration
def test_score_through_the_openai_provider_on_a_llama_server(llama_server, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    config = tmp_path / "judge.toml"
    config.write_text(
        (EXAMPLES / "llama-server.toml").read_text().replace("http://127.0.0.1:8000/v1", llama_server.base_url)
    )
    argv = ["score", str(EXAMPLES / "summaries.jsonl"), "--config", str(config), "--criterion", "consistency"]
    code, out, _ = run(argv, capsys)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and len(lines) == 6
    assert {line["provider"] for line in lines} == {"openai"}
    for line in lines:
        assert line["distribution"]["method"] == "logprobs" and 0 < line["distribution"]["coverage"] <= 1


def _summeval_slice(tmp_path: Path) -> Path:
    """Six real SummEval outputs (three systems on each of the two shortest articles): what the fused judge's
    news fit was made for, so ``auto`` uses it (a made-up three-word article lies outside the fit's domain)."""
    rows = [json.loads(line) for line in (Path(__file__).resolve().parents[3] / "shared" / "data" / "summeval.jsonl").open()]
    by_doc: dict[str, list[dict]] = {}
    for row in rows:
        by_doc.setdefault(row["doc_id"], []).append(row)
    docs = sorted(by_doc, key=lambda d: len(by_doc[d][0]["source"]))[:2]
    chosen = [row for d in docs for row in sorted(by_doc[d], key=lambda r: r["system_id"])[:3]]
    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "summeval.jsonl").write_text("\n".join(json.dumps(r) for r in chosen) + "\n")
    return tmp_path


@pytest.mark.integration
def test_bench_runs_meta_evaluates_and_resumes(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    data = _summeval_slice(tmp_path / "data")
    argv = ["bench", "--dataset", "summeval", "--data-dir", str(data), "--criteria", "consistency",
            "--config", str(EXAMPLES / "local.toml"), "--out", str(tmp_path / "out"), "--json"]  # fmt: skip
    code, out, _ = run(argv, capsys)
    result = json.loads(out)
    assert code == 0 and result["counts"]["join"]["n_joined"] == 6
    assert {lv["correlation"]["level"] for lv in result["levels"]} == {"sample", "summary", "system"}
    predictions = (tmp_path / "out" / "summeval.consistency.auto.jsonl").read_text().splitlines()
    assert len(predictions) == 6  # the default method, auto: the fused judge on the embedded model
    assert {json.loads(line)["method"] for line in predictions} == {"fused/source+reference"}  # SummEval items carry their reference
    code, out, _ = run(argv, capsys)  # resumes: nothing judged again, same numbers
    assert code == 0 and len((tmp_path / "out" / "summeval.consistency.auto.jsonl").read_text().splitlines()) == 6
    assert json.loads(out)["levels"] == result["levels"]


@pytest.mark.integration
def test_score_through_the_anthropic_provider_via_the_litellm_proxy(litellm_proxy, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PROXY_KEY", litellm_proxy.api_key)
    config = tmp_path / "judge.toml"
    config.write_text(
        f'[[providers]]\nkind = "anthropic"\nmodel = "{litellm_proxy.model}"\nbase_url = "{litellm_proxy.base_url}"\n'
        'api_key_env = "PROXY_KEY"\n[estimation]\nsamples = 6\n'
    )
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join((EXAMPLES / "summaries.jsonl").read_text().splitlines()[:2]) + "\n")
    code, out, _ = run(["score", str(source), "--config", str(config), "--criterion", "consistency"], capsys)
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 2 and {line["provider"] for line in lines} == {"anthropic"}
    for line in lines:
        assert line["method"] == "geval/sampling" and len(line["raw"]) == 6
        if line["distribution"] is not None:
            assert line["distribution"]["n_samples"] == 6
        else:
            assert line["status"] == "unparsed" and line["score"] is None
    assert code == (0 if all(line["score"] is not None for line in lines) else 2)


def test_score_several_preset_criteria_fine_grained_on_the_embedded_model(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    out = tmp_path / "results.jsonl"
    argv = ["score", str(EXAMPLES / "summaries.jsonl"), "--config", str(EXAMPLES / "local.toml"), "--preset", "summeval",
            "--criterion", "coherence, fluency", "--template", "direct.likert.shared_criteria", "-o", str(out), "--quiet"]  # fmt: skip
    code, _, _ = run(argv, capsys)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0 and len(lines) == 6
    for line in lines:
        assert line["method"] == "geval/fine-grained" and line["criterion"] == "coherence+fluency"
        parts = line["parts"]
        assert set(parts) == {"coherence", "fluency"} and all(p["method"] == "geval/exact" for p in parts.values())
        assert line["score"] == pytest.approx((parts["coherence"]["score"] + parts["fluency"]["score"]) / 2)


@pytest.mark.parametrize(
    "extra,message",
    [
        (["--criterion", "wit"], "unknown criterion 'wit'"),
        (["--definition", "x"], "use one"),
        (["--criterion", "understandability,engagingness"], "one scale"),
    ],
)
def test_score_preset_criteria_errors_exit_3(tmp_path, capsys, extra, message):
    path = tmp_path / "items.jsonl"
    path.write_text('{"output": "fine", "source": "a source"}\n')
    dataset = "topicalchat" if "engagingness" in " ".join(extra) else "summeval"
    code, _, err = run(["score", str(path), "--provider", "local", "--preset", dataset, "--no-cache", *extra], capsys)
    assert code == 3 and message in err


def test_score_several_criteria_without_a_preset_exit_3(tmp_path, capsys):
    path = tmp_path / "items.jsonl"
    path.write_text('{"output": "fine", "source": "a source"}\n')
    code, _, err = run(["score", str(path), "--provider", "local", "--no-cache", "--criterion", "coherence,fluency"], capsys)
    assert code == 3 and "add --preset DATASET" in err


README_BUILD = re.compile(r"llama\.cpp built for\s+`([^`]+)`")
README_CELL = re.compile(r"(\d\.\d\d) \[(\d\.\d\d), (\d\.\d\d)\]")


def assert_readme_figures(lines: list[dict]) -> None:
    """The README's table of what the first command prints, against this run on an empty cache: within 0.011 (its
    two decimals, rounded) on the llama.cpp build the README names, within 0.07 on a build for other CPU instruction
    sets (the tolerance benchmarks/README.md states, "Scores across llama.cpp builds")."""
    readme = (EXAMPLES.parent / "README.md").read_text()
    section = readme.split("## What the first command prints", 1)[1].split("\n## ", 1)[0]
    shown = [tuple(map(float, cell)) for cell in README_CELL.findall(section)]
    build = README_BUILD.search(section)
    assert len(shown) == 6 and build, "the README's table of six scores and the build that printed them"
    ids = [json.loads(line)["id"] for line in (EXAMPLES / "summaries.jsonl").read_text().splitlines()]
    rows = {line["id"]: line for line in lines}
    for item_id, (score, low, high) in zip(ids, shown, strict=True):
        row = rows[item_id]
        tolerance = 0.011 if row["provenance"]["served"]["build"] == build.group(1) else 0.07
        got = (row["score"], *row["details"]["interval"])
        assert all(abs(a - b) <= tolerance for a, b in zip(got, (score, low, high))), (item_id, got, (score, low, high))

