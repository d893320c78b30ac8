"""The hostile catalogue, transport and config half (issue 29, items 13-29): a broken or hostile server, a key
pasted in the wrong place, an exception no provider should raise.

Each row runs the real command line (``judgesdk.cli.app.main`` in this process) against a loopback server that
answers exactly as the row scripts it (tests/support/raw_server.py), and asserts the exit code, what the message
or the result row says, no traceback, and that no secret appears in stdout, stderr or the results file. The
rows of the input half are in tests/catalogue/test_hostile_input.py.
"""

from __future__ import annotations

import asyncio
import json
import threading
from pathlib import Path

import pytest
from conftest import need

from judgesdk.core.errors import ProviderError, parse_retry_after
from judgesdk.core.types import JudgeItem
from judgesdk.judging.judge import Judge
from judgesdk.provider.protocol import Capabilities, Choice, GenerateRequest, GenerateResponse

from support.hostile import CLEARED_ENV, SECRET, assert_one_line_error, run
from support.raw_server import RawServer, Reply, chat_completion

ITEM = '{"id": "1", "output": "The council approved a park.", "source": "The city council approved a new park."}\n'


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in (*CLEARED_ENV, "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))


@pytest.fixture
def items(tmp_path) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text(ITEM)
    return path


def config(tmp_path: Path, provider: str, extra: str = "") -> Path:
    """A judge config: ``extra`` top-level lines and sections first, then one ``[[providers]]`` holding ``provider``."""
    path = tmp_path / "judge.toml"
    path.write_text(f'method = "direct"\n{extra}\n[[providers]]\n{provider}\n')
    return path


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def no_secret(*texts: str, secret: str = SECRET) -> None:
    for text in texts:
        assert "Traceback" not in text and secret not in text, text


# -- 13: the key pasted where its variable's name goes ----------------------------------------------------


@pytest.mark.parametrize("pasted", [SECRET, "AbCdEf0123456789XyZwQrStUv"])  # one no variable can be named, one it could
def test_13_a_key_written_as_api_key_env_is_refused_and_never_printed(pasted, tmp_path, items, capsys):
    cfg = config(tmp_path, f'kind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\napi_key_env = "{pasted}"')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    no_secret(out, err, secret=pasted)
    if code == 3:
        assert_one_line_error(code, err, "api_key_env", "MY_SERVER_KEY", secret=pasted)
    else:  # a name a variable could have: the item's error says so, without the value
        assert code == 2 and "looks like a key" in out, (code, out, err)


# -- 14: credentials in a base URL are sent to that host and shown nowhere -------------------------------


def test_14_credentials_in_a_base_url_are_never_echoed(tmp_path, items, capsys):
    with RawServer(lambda request: Reply(200, body=b"<html>not an API</html>", headers={"content-type": "text/html"})) as server:
        url = server.base_url.replace("http://", f"http://judge:{SECRET}@")
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{url}"', "[retry]\nmax_attempts = 1\n")
        out_file = tmp_path / "out.jsonl"
        code, out, err = run(["score", items, "--config", cfg, "--no-cache", "-o", out_file], capsys)
        assert server.requests, "the server was never asked"
    assert code == 2, (code, out, err)
    no_secret(out, err, out_file.read_text())
    assert rows(out_file)[0]["status"] == "error"


def test_14_credentials_in_judgesdk_base_url_are_never_echoed(tmp_path, items, monkeypatch, capsys):
    with RawServer(lambda request: Reply(200, body=b"<html>not an API</html>", headers={"content-type": "text/html"})) as server:
        monkeypatch.setenv("JUDGESDK_PROVIDER", "openai")
        monkeypatch.setenv("JUDGESDK_BASE_URL", server.base_url.replace("http://", f"http://judge:{SECRET}@"))
        out_file = tmp_path / "out.jsonl"
        code, out, err = run(["score", items, "--no-cache", "-o", out_file], capsys)
    assert code == 2, (code, out, err)
    no_secret(out, err, out_file.read_text())


# -- 15: a bad capabilities override is named, its value is not ------------------------------------------


def test_15_a_bad_capabilities_value_is_one_line_naming_the_field(tmp_path, items, capsys):
    cfg = config(tmp_path, f'kind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n[providers.capabilities]\nlogprobs = "{SECRET}"\nmax_top_logprobs = 5')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "capabilities", "logprobs")
    assert "max_top_logprobs" not in err and out == ""


def test_15_an_unknown_capability_names_the_valid_ones(tmp_path, items, capsys):
    cfg = config(tmp_path, 'kind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n[providers.capabilities]\nlogprob = true')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "logprob", "unknown capability", "logprobs")


# -- 16: a server's Retry-After never holds a run past the retry policy's limits -------------------------


@pytest.mark.parametrize("header", [{"retry-after": "100000"}, {"retry-after": "inf"}, {"retry-after-ms": "inf"}, {"retry-after": "nan"}])
def test_16_a_huge_retry_after_under_a_rate_limit_waits_at_most_max_wait_s(header, tmp_path, items, capsys):
    """The run must end (an error row) within the policy's limits; a hang fails the join below (generous: no timing)."""
    answers = iter([Reply(429, json_body={"error": {"message": "slow down"}}, headers=header)])

    def answer(request):
        return next(answers, Reply(200, json_body=chat_completion("4")))

    with RawServer(answer) as server:
        extra = "[retry]\nmax_attempts = 3\nmax_total_s = 10\nmax_wait_s = 0.2\ninitial_wait_s = 0.1\n"
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{server.base_url}"\n[providers.rate_limit]\nmax_concurrency = 2', extra)
        done: list = []
        worker = threading.Thread(target=lambda: done.append(run(["score", items, "--config", cfg, "--no-cache"], capsys)), daemon=True)
        worker.start()
        worker.join(120)  # the policy allows 10 s; 100000 s would be a hang
        assert done, "the run was still waiting on the server's Retry-After"
        code, out, err = done[0]
    assert code == 0, (out, err)
    assert len(server.requests) == 2 and '"status": "ok"' in out


@pytest.mark.parametrize("value", ["inf", "-inf", "nan", "1e400"])
def test_16_a_retry_after_that_is_no_finite_number_is_no_wait(value):
    assert parse_retry_after({"retry-after": value}) is None
    assert parse_retry_after({"retry-after-ms": value}) is None


# -- 18: timeout_s bounds the whole request, a trickled body included ------------------------------------


def test_18_a_body_trickled_past_timeout_s_is_a_timeout(tmp_path, items, capsys):
    """Each byte arrives well within the read timeout; the body as a whole takes ~10 s against timeout_s = 1."""
    body = json.dumps(chat_completion("4")).encode()
    with RawServer(lambda request: Reply(200, body=body, trickle_s=10.0 / len(body))) as server:
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{server.base_url}"\ntimeout_s = 1', "[retry]\nmax_attempts = 1\n[overload]\nenabled = false\n")
        code, out, err = run(["score", items, "--config", cfg, "--no-cache"], capsys)
    no_secret(out, err)
    assert code == 2, (code, out, err)
    assert '"status": "error"' in out and "within timeout_s = 1 s" in out, out


# -- 19: an exception no provider should raise fails its item only ---------------------------------------


class Raising:
    """A provider that raises ``exc`` for the output "bad" and answers 4 otherwise."""

    kind, model = "raising", "raising-1"
    capabilities = Capabilities()

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if any("bad" in message.content for message in request.messages):
            raise self.exc
        return GenerateResponse(choices=[Choice(text="4")], model=self.model)

    async def aclose(self) -> None:
        pass


@pytest.mark.parametrize("exc", [SystemExit(3), GeneratorExit(), asyncio.CancelledError(), KeyboardInterrupt()], ids=lambda e: type(e).__name__)
def test_19_a_stray_base_exception_in_one_item_fails_that_item_only(exc):
    """SystemExit once ended the judge's loop thread (the run waited forever); the others gave a traceback."""
    done: list = []

    def judge_two() -> None:
        with Judge(Raising(exc), method="direct") as judge:
            done.append(judge.score_many([JudgeItem(output="good"), JudgeItem(output="bad")], criterion="coherence"))

    worker = threading.Thread(target=judge_two, daemon=True)
    worker.start()
    worker.join(120)
    assert done, f"the run hung after {type(exc).__name__}"
    good, bad = done[0]
    assert good.status == "ok" and bad.status == "error", (good, bad)
    assert type(exc).__name__ in (bad.error or "") and "ended this item only" in bad.error


# -- 27: a base URL without a scheme is a config error, not a retried connection error -------------------


@pytest.mark.parametrize("url", ["127.0.0.1:8080/v1", "localhost:8080", "ftp://127.0.0.1/v1", "http:///v1"])
def test_27_a_base_url_that_is_no_http_address_is_refused(url, tmp_path, items, capsys):
    cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{url}"')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "base_url")
    assert "http://" in err


def test_27_the_base_url_flag_is_checked_too(items, capsys):
    code, out, err = run(["score", items, "--provider", "openai", "--base-url", "127.0.0.1:8080/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "base_url", "http://")


# -- 28: a malformed answer is one line naming the field --------------------------------------------------


def test_28_a_null_logprob_token_is_one_line_naming_the_field(tmp_path, items, capsys):
    logprobs = {"content": [{"token": None, "logprob": -0.1, "top_logprobs": [{"token": "4", "logprob": -0.1}]}]}
    with RawServer(lambda request: Reply(200, json_body=chat_completion("4", logprobs=logprobs))) as server:
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{server.base_url}"\n[providers.capabilities]\nlogprobs = true', "[retry]\nmax_attempts = 1\n")
        cfg.write_text(cfg.read_text().replace('method = "direct"', 'method = "geval"'))
        code, out, err = run(["score", items, "--config", cfg, "--no-cache"], capsys)
    no_secret(out, err)
    assert code == 2, (code, out, err)
    row = json.loads(out.strip().splitlines()[-1])
    assert row["status"] == "error" and "logprobs.content[0].token is null, not text" in row["error"], row
    assert "\n" not in row["error"] and "validation error" not in row["error"]


@pytest.mark.parametrize("message", [{"content": None}, {"content": [{"type": "text", "text": None}]}, {"usage": None}], ids=["content", "text", "usage"])
def test_28_a_malformed_anthropic_reply_is_one_line_naming_the_field(message, tmp_path, items, capsys):
    need("anthropic")
    reply = {"id": "m1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "end_turn",
             "content": [{"type": "text", "text": "4"}], "usage": {"input_tokens": 3, "output_tokens": 1}, **message}  # fmt: skip
    with RawServer(lambda request: Reply(200, json_body=reply)) as server:
        cfg = config(tmp_path, f'kind = "anthropic"\nmodel = "claude-x"\nbase_url = "{server.origin}"', "[retry]\nmax_attempts = 1\n")
        code, out, err = run(["score", items, "--config", cfg, "--no-cache"], capsys)
    no_secret(out, err)
    assert code == 2, (code, out, err)
    row = json.loads(out.strip().splitlines()[-1])
    assert row["status"] == "error" and "malformed answer" in row["error"] and "NoneType" not in row["error"], row
    assert f"{next(iter(message))}" in row["error"]


# -- 29: a top-level adapter option says where it belongs -------------------------------------------------


def test_29_a_top_level_model_path_says_it_belongs_under_providers_options(tmp_path, items, capsys):
    cfg = tmp_path / "judge.toml"
    cfg.write_text('model_path = "/models/judge.gguf"\n[[providers]]\nkind = "local"\n')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "model_path", "[providers.options]")


def test_29_a_top_level_provider_field_says_it_belongs_under_providers(tmp_path, items, capsys):
    cfg = tmp_path / "judge.toml"
    cfg.write_text('timeout_s = 5\n[[providers]]\nkind = "openai"\nbase_url = "http://127.0.0.1:9/v1"\n')
    code, out, err = run(["score", items, "--config", cfg, "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "timeout_s", "[[providers]]")


# -- minor: a redirect is a permanent error naming where it points; a huge answer is refused ---------------


def test_a_redirect_loop_is_a_permanent_error_asked_once(tmp_path, items, capsys):
    with RawServer(lambda request: Reply(307, body=b"", headers={"location": request.path})) as server:
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{server.base_url}"')
        code, out, err = run(["score", items, "--config", cfg, "--no-cache"], capsys)
        asked = len(server.requests)
    assert code == 2 and asked == 1, (code, asked, out, err)
    assert "redirects" in out and "set base_url" in out


def test_an_answer_far_longer_than_asked_for_is_refused_and_not_cached(tmp_path, items, capsys):
    huge = chat_completion("4" + " padding" * 200_000)  # 1.6 MB of text for a few tokens
    with RawServer(lambda request: Reply(200, json_body=huge)) as server:
        cfg = config(tmp_path, f'kind = "openai"\nbase_url = "{server.base_url}"', "[retry]\nmax_attempts = 1\n")
        out_file = tmp_path / "out.jsonl"
        code, out, err = run(["score", items, "--config", cfg, "-o", out_file, "--quiet"], capsys)
        assert code == 2, (code, err)
        assert "malformed answer" in out_file.read_text() and out_file.stat().st_size < 10_000
        code, out, err = run(["score", items, "--config", cfg, "-o", tmp_path / "again.jsonl", "--quiet"], capsys)
        asked = [r for r in server.requests if r.method == "POST"]  # each run also lists the server's models once (GET, issue 29 item 3)
        assert len(asked) == 2, "the refused answer was served from the cache"


def test_a_stray_exception_in_the_stack_is_a_provider_error():
    """The witness (top of every judge's stack) turns a SystemExit below it into the item's ProviderError."""
    from judgesdk.provider.stack import witnessed

    provider = witnessed(Raising(SystemExit(2)))
    with pytest.raises(ProviderError, match="SystemExit"):
        asyncio.run(provider.generate(GenerateRequest(messages=[{"role": "user", "content": "bad"}])))


# -- 17: an output that is no regular file is never read ---------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/full", "/dev/zero"])
def test_17_an_output_that_is_a_device_is_refused_unread(device, items, capsys):
    if not Path(device).exists():
        pytest.skip(f"no {device} here")
    code, out, err = run(["score", items, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet", "-o", device], capsys)
    assert_one_line_error(code, err, device, "not a regular file")


# -- 20: a results file that cannot be written is one line saying what was kept ---------------------------


def test_20_a_results_file_on_a_full_disk_is_one_line_and_resumable(tmp_path):
    """The child may write at most 4 KB per file (RLIMIT_FSIZE: the kernel's EFBIG, as a full disk's ENOSPC):
    the run stops with one line, keeps whole rows only, and the same command resumes after the limit is gone."""
    resource, signal = need("resource"), need("signal")
    import os
    import subprocess
    import sys

    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": str(i), "output": f"Output number {i}."}) + "\n" for i in range(40)))
    out_file = tmp_path / "out.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in CLEARED_ENV}
    env.update(PYTHONDONTWRITEBYTECODE="1", JUDGESDK_CACHE_DIR=str(tmp_path / "cache"))

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)

    with RawServer(lambda request: Reply(200, json_body=chat_completion("4"))) as server:
        argv = [sys.executable, "-c", "import sys; from judgesdk.cli.app import main; sys.exit(main())", "score", str(items),
                "--provider", "openai", "--model", "m", "--base-url", server.base_url, "--no-cache", "--quiet", "-o", str(out_file)]  # fmt: skip
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, preexec_fn=limited)
        assert_one_line_error(done.returncode, done.stderr, "cannot write", "kept", "run the same command again")
        kept = rows(out_file)  # every line whole: no cut row
        assert 0 < len(kept) < 40 and out_file.read_bytes().endswith(b"\n")
        again = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300)
    assert again.returncode == 0, again.stderr
    assert {row["id"] for row in rows(out_file)} == {str(i) for i in range(40)}


# -- 21: a deeply nested value in an input line is refused in one line -------------------------------------


@pytest.mark.parametrize("depth", [5000, 300])
def test_21_a_deeply_nested_value_is_one_line(depth, tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"output": "fine"}\n{"output": "x", "extra": ' + "[" * depth + "]" * depth + "}\n")
    code, out, err = run(["score", path, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "in.jsonl:2", "nested")


# -- 25: standard input as the input file ------------------------------------------------------------------


@pytest.mark.parametrize("name", ["-", "/dev/stdin"])
def test_25_standard_input_is_named_as_such(name, capsys):
    code, out, err = run(["score", name, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "standard input", "save")
    assert "does not exist" not in err


# -- 23, 24: a damaged cache database names the fix --------------------------------------------------------


def damaged_cache(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "cache.db").write_bytes(b"this is not an SQLite database " * 64)
    return folder


@pytest.mark.parametrize("action", ["stats", "clear"])
def test_24_a_damaged_cache_names_the_folder_to_delete(action, tmp_path, capsys):
    folder = damaged_cache(tmp_path / "broken")
    code, out, err = run(["cache", action, "--dir", folder], capsys)
    assert_one_line_error(code, err, "damaged", f"delete or move the folder {folder}")
    assert "free space" not in err


def test_24_a_run_on_a_damaged_cache_names_the_fix(tmp_path, items, monkeypatch, capsys):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(damaged_cache(tmp_path / "broken")))
    code, out, err = run(["score", items, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--quiet"], capsys)
    assert_one_line_error(code, err, "damaged", "delete or move the folder", "--no-cache")


def test_23_merging_a_damaged_cache_is_one_line(tmp_path, capsys):
    from judgesdk.provider.layers.cache import open_cache

    good = tmp_path / "good"
    with open_cache(good) as cache:
        cache.set("k", "v")
    code, out, err = run(["cache", "merge", tmp_path / "dst", good, damaged_cache(tmp_path / "broken")], capsys)
    assert_one_line_error(code, err, "cache merge", "broken", "damaged", "move it aside")
    with open_cache(tmp_path / "dst") as merged:
        assert merged.get("k") == "v"  # what was merged before it stays


# -- 26: different doc_id/system_id pairs that join to one id are not "the same id" ----------------------


def test_26_pairs_that_join_to_one_id_are_named_as_different_items(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"output": "x", "doc_id": "a:b", "system_id": "c"}\n{"output": "y", "doc_id": "a", "system_id": "b:c"}\n')
    code, out, err = run(["score", path, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "in.jsonl: lines 1, 2", "different items", "'a:b:c'", "explicit 'id'")
    assert "the same id" not in err


def test_26_the_same_pair_twice_is_still_the_same_id(tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"output": "x", "doc_id": "a", "system_id": "c"}\n{"output": "y", "doc_id": "a", "system_id": "c"}\n')
    code, out, err = run(["score", path, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "have the same id 'a:c'")


# -- 22: a results file a gate cannot trust is refused in one line, never a verdict ---------------------
# (held on main when these rows were written: kept as the catalogue's regression rows)


@pytest.mark.parametrize(
    "row, says",
    [
        ({"distribution": {"labels": [1, 2, 3, 4, 5], "probs": ["a", 0.2, 0.2, 0.2, 0.2]}}, "distribution.probs"),
        ({"status": "weird"}, "status"),
        ({"score": float("nan")}, "score must be a finite number"),
        ({"score": float("inf")}, "score must be a finite number"),
    ],
    ids=["probs not numbers", "unknown status", "NaN score", "infinite score"],
)
def test_22_a_results_row_a_gate_cannot_trust_is_one_line(row, says, tmp_path, capsys):
    gate = tmp_path / "gate.toml"
    gate.write_text('[[criteria]]\nname = "c"\nscale = "1-5"\n[[gates]]\nname = "m"\nkind = "mean"\ncriterion = "c"\nmin = 3\n')
    results = tmp_path / "results.jsonl"
    results.write_text(json.dumps({"id": "1", "score": 3, "status": "ok", "criterion": "c", "method": "geval", **row}) + "\n")
    code, out, err = run(["gate", "--config", gate, "--results", results], capsys)
    assert_one_line_error(code, err, "results.jsonl", says)


# -- minor: NaN or Infinity in an extra field would make the results file non-standard JSON ---------------


@pytest.mark.parametrize("value", ["NaN", "Infinity", "[1, -Infinity]", '{"a": NaN}'])
def test_nan_in_an_extra_field_is_refused_naming_the_field(value, tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text('{"output": "fine"}\n{"output": "x", "weight": ' + value + "}\n")
    code, out, err = run(["score", path, "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "in.jsonl:2", "'weight'", "NaN or Infinity")
