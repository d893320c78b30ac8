"""A fused judge of a server's own model, fitted through that server: the route for vLLM and SGLang, which cannot
serve the GGUF file the shipped fits are bound to (benchmarks/README.md, "Which servers can serve the fit").

``judgesdk calibrate --fused`` with a config whose first provider is the ``openai`` provider on ``python -m
llama_cpp.server`` (``api = "completions"``, echo) and names the served file's sha256 computes the signals through the
server and writes a fit bound to that file; the judge then scores through the server with that fit. Both equal the
same steps run on the in-process local provider over the same file. Without the sha256 the refit is refused before
any request.

The served file is ``../shared/gpu-check/tiny.gguf``: a 2-layer llama-architecture model with random weights and a
32,000-token vocabulary. ``llama_cpp.server`` sorts the whole vocabulary in Python for every echoed token, so on the
embedded model (262k tokens) the 24 labelled outputs here would take most of an hour; on this file, about a minute.
Its log-probabilities mean nothing, so the labels follow how much of each output comes from its source, a text
signal every fit reads: the fit has something real to find, and the server must carry the rest faithfully.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import require_llama_server

from judgesdk import Judge
from judgesdk.cli.app import main

from support.servers import LlamaServer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

WORDS = "council park garden river bridge school market station library museum harbour stadium".split()
FILLER = "purple engines quietly sang about distant volcanoes under frozen clocks every evening".split()


@pytest.fixture(scope="module")
def tiny_server(tiny_gguf):
    require_llama_server()  # tiny_gguf has checked llama_cpp
    server = LlamaServer(tiny_gguf, alias="tiny", n_threads=1)
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


def _labelled(path: Path) -> Path:
    """24 outputs of 6 sources (4 each): k of the output's 6 words come from its source, the rest are invented;
    the label is 1 + 4k/6 (a faithfulness the overlap decides)."""
    lines = []
    for doc in range(6):
        topic = WORDS[doc * 2 : doc * 2 + 2]
        source = f"The {topic[0]} near the {topic[1]} opened on Monday after a vote of the city board and a long public debate."
        taken = source.rstrip(".").split()
        for n, k in enumerate((0, 2, 4, 6)):
            output = " ".join(taken[:k] + FILLER[doc : doc + 6 - k])
            lines.append({"id": f"d{doc}-{n}", "doc_id": f"d{doc}", "source": source, "output": output, "scores": {"faithfulness": 1 + 4 * k / 6}})
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _server_config(server: LlamaServer, sha: str | None, fit: Path | None = None) -> dict:
    options = {"model_sha256": sha} if sha else {}
    config = {
        "cache": {"enabled": False}, "retry": {"max_attempts": 1}, "concurrency": 1,
        "providers": [{"kind": "openai", "model": server.model, "base_url": server.base_url, "api": "completions",
                       "timeout_s": 600, "options": options}],
    }  # fmt: skip
    return config | ({"method": "fused", "method_options": {"fused_model": str(fit)}} if fit else {})


def _local_config(path: Path, fit: Path | None = None) -> dict:
    config = {"cache": {"enabled": False}, "providers": [{"kind": "local", "options": {"model_path": str(path), "n_threads": 1}}]}
    return config | ({"method": "fused", "method_options": {"fused_model": str(fit)}} if fit else {})


def _config_file(config: dict, path: Path) -> Path:
    """The config as the CLI reads it (JSON is YAML)."""
    path.write_text(json.dumps(config))
    return path


def test_a_fit_made_through_the_server_is_bound_to_its_file_and_judges_through_it(tiny_server, tiny_gguf, tmp_path, capsys):
    from judgesdk.fused.model import file_sha256, load
    from judgesdk.fused.refitting import refit

    path = tiny_gguf
    sha = file_sha256(path)
    labels = _labelled(tmp_path / "labels.jsonl")
    served_fit = tmp_path / "served-fit.json"
    config = _config_file(_server_config(tiny_server, sha), tmp_path / "server.yaml")
    code = main(["calibrate", "--fused", "--human", str(labels), "--dimension", "faithfulness", "--config", str(config), "-o", str(served_fit)])
    printed = capsys.readouterr()
    assert code == 0, printed.err
    fitted = load(served_fit)
    assert fitted.model.sha256 == sha and fitted.data["items"] == 24
    served = fitted.criteria["faithfulness"][0]
    assert served.cv["per_doc_spearman"] > 0.5, printed.out  # the overlap decides the labels: the fit finds it through the server

    with Judge.from_config(_local_config(path)) as here:  # the same refit in process, on the same file
        mine = here.run(refit(here.provider(0), labels, "faithfulness")).fitted
    local = mine.criteria["faithfulness"][0]
    assert mine.model.sha256 == sha and (local.features, local.choice) == (served.features, served.choice)
    assert local.coef == pytest.approx(served.coef, abs=1e-3) and local.intercept == pytest.approx(served.intercept, abs=1e-3)
    assert local.cv["per_doc_spearman"] == pytest.approx(served.cv["per_doc_spearman"], abs=0.02)

    source = "The library near the harbour opened on Monday after a vote of the city board and a long public debate."
    items = [{"id": "copied", "source": source, "output": "The library near the harbour opened"},
             {"id": "invented", "source": source, "output": "purple engines quietly sang about volcanoes"}]  # items shaped as the labelled ones  # fmt: skip
    with Judge.from_config(_server_config(tiny_server, sha, served_fit)) as there, Judge.from_config(_local_config(path, served_fit)) as here:
        through_server = there.score_many(items, criterion="faithfulness")
        in_process = here.score_many(items, criterion="faithfulness")
    for a, b in zip(through_server, in_process):
        assert a.status == b.status == "ok" and a.method.startswith("fused"), (a.status, a.error, a.notes)
        assert abs(a.score - b.score) <= 0.03, (a.id, a.score, b.score)
        assert a.details["fit"]["model_sha256"] == sha
    assert through_server[0].score > through_server[1].score  # the copied output above the invented one


def test_a_refit_through_a_server_without_the_files_sha256_is_refused(tiny_server, tmp_path, capsys):
    config = _config_file(_server_config(tiny_server, None), tmp_path / "server.yaml")
    labels = _labelled(tmp_path / "labels.jsonl")
    code = main(["calibrate", "--fused", "--human", str(labels), "--dimension", "faithfulness", "--config", str(config), "-o", str(tmp_path / "fit.json")])
    err = capsys.readouterr().err
    assert code == 3 and "model_sha256" in err and "Traceback" not in err, err
    assert not (tmp_path / "fit.json").exists()
