"""Cache faults (issue 12, item 4), against a real diskcache/sqlite directory: a cache that cannot be used is
a typed error before anything is asked (CLI exit 3); one that fails during a run costs no answer and warns
once; the size limit is configurable."""

from __future__ import annotations

import errno
import json
import logging
import os
import re
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import diskcache
import pytest

from judgesdk.cli.app import main
from judgesdk.core.errors import ConfigError
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.layers.cache import CachedProvider, open_cache
from judgesdk.provider.protocol import GenerateRequest, Message, as_text, find_layer
from judgesdk.provider.stack import assemble
from judgesdk.providers.scripted import ScriptedProvider


def _permission_bits_bind() -> bool:
    """False for root (or any process with CAP_DAC_OVERRIDE): it writes into a read-only folder regardless."""
    import tempfile

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch, "ro")
        folder.mkdir(mode=0o500)
        try:
            (folder / "probe").touch()
        except PermissionError:
            return True
        finally:
            folder.chmod(0o700)
        return False


PERMISSION_BITS_BIND = _permission_bits_bind()


def _access_by_the_bits(path: Any, mode: int, *args: Any, **kwargs: Any) -> bool:
    """``os.access`` as the kernel answers a process that owns ``path`` and may not write through its permission bits:
    what a check of them sees for an ordinary user, where this process is root (CI runs as root)."""
    try:
        bits = os.stat(path).st_mode
    except OSError:
        return False
    wanted = [flag for test, flag in ((os.R_OK, stat.S_IRUSR), (os.W_OK, stat.S_IWUSR), (os.X_OK, stat.S_IXUSR)) if mode & test]
    return all(bits & flag for flag in wanted)


def _checked_as_nobody(folder: Path) -> list[str] | None:
    """What ``open_cache`` says of ``folder`` and of a folder to create inside it, asked by a child process that drops
    to the unprivileged user 65534 (the kernel's own answer, for root); None where this process may not change user."""
    if not hasattr(os, "fork") or os.geteuid() != 0:
        return None
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: only calls that need no lock another thread may hold, then _exit
        said = []
        try:
            try:
                os.setgroups([])
                os.setgid(65534)
                os.setuid(65534)
            except PermissionError:  # no CAP_SETUID: the user cannot be changed here
                said = ["cannot change user"]
            else:
                for target in (folder, folder / "sub"):
                    try:
                        open_cache(target).close()
                        said.append(f"opened {target}")
                    except ConfigError as exc:
                        said.append(str(exc))
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails on it
            said.append(f"the child failed: {exc!r}")
        finally:
            os.write(write, "\n".join(said).encode())
            os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode().split("\n")
    os.waitpid(pid, 0)
    return None if said == ["cannot change user"] else said


def ask(i: int) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=f"question {i}"),))


def echo() -> ScriptedProvider:
    return ScriptedProvider(lambda r: "answer to " + as_text(r.messages))


def cache_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "judgesdk.cache" and r.levelno == logging.WARNING]


# -- a cache that cannot be used: bad input, refused before anything is asked -------------------------


def test_a_cache_path_that_is_a_file_is_a_config_error_that_says_what_to_fix(tmp_path):
    blocker = tmp_path / "cache"
    blocker.write_text("not a folder")
    with pytest.raises(ConfigError, match=r"cache directory .*cache is a file.*--no-cache"):
        open_cache(blocker)
    with pytest.raises(ConfigError, match=r"cannot be created: .*cache is a file"):
        open_cache(blocker / "inside")
    with pytest.raises(ConfigError, match="is a file"):  # the run's wiring opens it when a provider is built
        assemble(echo(), load_config({"cache": {"directory": str(blocker)}}).stack_plan())
    # the same directory with the cache turned off is no problem: --no-cache rescues such a run
    assemble(echo(), load_config({"cache": {"directory": str(blocker), "enabled": False}}).stack_plan())
    assert blocker.read_text() == "not a folder"


def test_score_with_a_cache_path_that_is_a_file_exits_3_before_any_item(tmp_path, capsys, monkeypatch):
    blocker = tmp_path / "cache"
    blocker.write_text("")
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "output": "A summary."}) + "\n")
    config = tmp_path / "judge.toml"
    config.write_text(f'[[providers]]\nkind = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n\n[cache]\ndirectory = "{blocker}"\n')
    for name in [k for k in os.environ if k.startswith("JUDGESDK_")]:
        monkeypatch.delenv(name)
    results = tmp_path / "results.jsonl"
    code = main(["score", str(items), "--config", str(config), "--method", "direct", "-o", str(results), "--quiet"])
    err = capsys.readouterr().err
    assert code == 3, err
    assert "is a file" in err and str(blocker) in err and "--no-cache" in err and "Traceback" not in err
    assert not results.exists() or results.read_text() == ""  # nothing was judged


def test_a_read_only_cache_directory_is_a_config_error(monkeypatch):
    """Run as root too (CI runs as root, and root writes through permission bits): there ``os.access`` answers from the
    bits as the kernel answers their owner, and a child that drops to an unprivileged user checks the same folder."""
    base = Path(tempfile.mkdtemp())  # not tmp_path: pytest keeps its folders to their owner, and the child must reach this one
    base.chmod(0o755)
    folder = base / "ro"
    folder.mkdir()
    open_cache(folder).close()
    folder.chmod(0o555)
    try:
        said = _checked_as_nobody(folder)
        if said is not None:
            assert re.search(r"ro is not writable.*--no-cache", said[0]) and re.search(r"cannot be created: .*ro is not writable", said[1]), said
        with monkeypatch.context() as patch:
            if not PERMISSION_BITS_BIND:
                patch.setattr(os, "access", _access_by_the_bits)
            with pytest.raises(ConfigError, match=r"ro is not writable.*--no-cache"):
                open_cache(folder)
            with pytest.raises(ConfigError, match=r"cannot be created: .*ro is not writable"):
                open_cache(folder / "sub")
    finally:
        folder.chmod(0o700)
        shutil.rmtree(base)


# -- a cache that fails during a run: every answer kept, one warning, the run goes on -----------------

FAILURES = [
    sqlite3.OperationalError("database or disk is full"),
    sqlite3.OperationalError("attempt to write a readonly database"),
    OSError(errno.ENOSPC, "No space left on device"),
    diskcache.Timeout("database is locked"),
]


@pytest.mark.parametrize("failure", FAILURES, ids=lambda e: str(e)[:24])
async def test_a_failed_write_keeps_the_answer_warns_once_and_goes_on_without_the_cache(tmp_path, caplog, monkeypatch, failure):
    cache = open_cache(tmp_path)
    inner = echo()
    provider = CachedProvider(inner, cache)
    assert (await provider.generate(ask(0))).choices[0].text == "answer to question 0"
    touched: list[str] = []

    def failing_set(*args, **kwargs):
        touched.append("set")
        raise failure

    real_get = cache.get
    monkeypatch.setattr(cache, "set", failing_set)
    monkeypatch.setattr(cache, "get", lambda *a, **k: touched.append("get") or real_get(*a, **k))
    answers = [await provider.generate(ask(i)) for i in range(1, 6)]
    assert [a.choices[0].text for a in answers] == [f"answer to question {i}" for i in range(1, 6)]
    assert not any(a.cached for a in answers) and len(inner.calls) == 6
    assert touched == ["get", "set"]  # after the failure the cache is left alone
    warnings = cache_warnings(caplog)
    assert len(warnings) == 1 and (str(failure.strerror) if isinstance(failure, OSError) else str(failure)) in warnings[0]
    assert provider.failure is not None and str(tmp_path) in provider.failure


async def test_a_failed_read_is_a_miss_with_one_warning(tmp_path, caplog, monkeypatch):
    cache = open_cache(tmp_path)
    inner = echo()
    provider = CachedProvider(inner, cache)
    await provider.generate(ask(0))
    def damaged(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(cache, "get", damaged)
    answers = [await provider.generate(ask(0)), await provider.generate(ask(1))]
    assert [a.choices[0].text for a in answers] == ["answer to question 0", "answer to question 1"]
    assert len(inner.calls) == 3 and len(cache_warnings(caplog)) == 1


async def test_a_damaged_entry_is_asked_again_and_replaced(tmp_path):
    from judgesdk.provider.layers.cache import cache_key

    cache = open_cache(tmp_path)
    inner = echo()
    cache.set(cache_key(inner, ask(0)), "{not json")
    provider = CachedProvider(inner, cache)
    assert (await provider.generate(ask(0))).choices[0].text == "answer to question 0"
    assert (await provider.generate(ask(0))).cached and len(inner.calls) == 1


RUN_INTO_A_FILE_SIZE_LIMIT = textwrap.dedent(
    """
    import asyncio, json, logging, resource, sys
    from judgesdk.provider.layers.cache import CachedProvider, open_cache
    from judgesdk.provider.protocol import GenerateRequest, Message, as_text
    from judgesdk.providers.scripted import ScriptedProvider

    warnings = []
    class Keep(logging.Handler):
        def emit(self, record):
            warnings.append(record.getMessage())
    logging.getLogger("judgesdk.cache").addHandler(Keep())

    cache = open_cache(sys.argv[1])
    limit = 256 * 1024  # no file this process writes may grow past it: sqlite's writes fail like a full disk's
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    provider = CachedProvider(ScriptedProvider(lambda r: as_text(r.messages) + " " + "x" * 20000), cache)

    async def run():
        asks = [GenerateRequest(messages=(Message(role="user", content=f"question {i}"),)) for i in range(40)]
        return [await provider.generate(a) for a in asks]

    answers = asyncio.run(run())
    print(json.dumps({"answers": [a.choices[0].text.rsplit(" ", 1)[0] for a in answers], "warnings": warnings, "failure": provider.failure}))
    """
)


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_FSIZE is POSIX")
def test_a_real_sqlite_write_failure_mid_run_loses_no_answer(tmp_path):
    """Not a mock: the process may not grow any file past 256 KiB (RLIMIT_FSIZE, which binds root too), so
    sqlite's own writes fail partway through the run, as on a full disk."""
    done = subprocess.run([sys.executable, "-c", RUN_INTO_A_FILE_SIZE_LIMIT, str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["answers"] == [f"question {i}" for i in range(40)]
    assert len(report["warnings"]) == 1 and report["failure"], report
    with diskcache.Cache(str(tmp_path)) as cache:
        assert 0 < len(cache) < 40  # what was stored before the failure is still there; the rest was not


# -- the size limit ----------------------------------------------------------------------------------


async def test_the_size_limit_is_a_config_field_and_bounds_the_cache(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGESDK_CACHE_SIZE_MB", raising=False)
    config = load_config({"cache": {"directory": str(tmp_path), "size_limit_mb": 0.25}})
    provider = find_layer(assemble(ScriptedProvider(lambda r: as_text(r.messages) + "y" * 8000), config.stack_plan()), CachedProvider)
    assert provider is not None and provider.cache.size_limit == 2**18
    for i in range(100):  # 800 KB of answers into a 256 KiB cache
        await provider.generate(ask(i))
    assert len(provider.cache) < 60 and provider.cache.volume() < 2 * 2**18
    assert (await provider.generate(ask(99))).cached  # the most recent answers stay
    assert open_cache(tmp_path).size_limit == 2**18  # opened without a limit (e.g. by a batch run): the one set stays
    for bad in (0, -1):
        with pytest.raises(ConfigError, match="cache.size_limit_mb"):
            load_config({"cache": {"size_limit_mb": bad}})
    monkeypatch.setenv("JUDGESDK_CACHE_SIZE_MB", "64")
    assert load_config({}).cache.size_limit_mb == 64.0


# -- batch answers written into a cache that fails: kept pending, the same command collects them later ----


class EndedBatches:
    """A batch backend whose batches end at once, answering each request with its prompt (no network)."""

    max_requests = 100

    def __init__(self) -> None:
        self.provider = echo()
        self.submitted: list[list[str]] = []
        self.fetched: list[str] = []

    async def submit(self, items):
        self.submitted.append([cid for cid, _ in items])
        return f"batch-{len(self.submitted)}"

    async def status(self, batch_id):
        return "ended"

    async def results(self, batch_id, requests):
        from judgesdk.provider.layers.batch import BatchResult

        self.fetched.append(batch_id)
        for cid, request in requests.items():
            yield BatchResult(custom_id=cid, response=await self.provider.generate(request))

    async def cancel(self, batch_id):
        return None


@pytest.mark.parametrize("failure", FAILURES, ids=lambda e: str(e)[:24])
async def test_batch_answers_a_failing_cache_cannot_take_stay_pending_and_a_later_run_stores_them(tmp_path, monkeypatch, failure):
    from judgesdk.provider.layers.batch import BatchRunner
    from judgesdk.provider.layers.cache import cache_key

    cache, backend, state = open_cache(tmp_path / "cache"), EndedBatches(), tmp_path / "state.json"
    requests = [ask(i) for i in range(3)]
    real_set = cache.set
    writes: list[str] = []

    def fails_on_the_second_write(key, *args, **kwargs):
        writes.append(key)
        if len(writes) >= 2:
            raise failure
        return real_set(key, *args, **kwargs)

    monkeypatch.setattr(cache, "set", fails_on_the_second_write)
    with pytest.raises(ConfigError) as raised:
        await BatchRunner(backend, cache, state, poll_interval_s=0.01).run(requests)
    message = str(raised.value)
    reason = failure.strerror if isinstance(failure, OSError) else str(failure)
    assert "batch-1" in message and "writing to the response cache" in message and str(reason) in message
    assert str(state) in message and "free space" in message and "\n" not in message
    saved = json.loads(state.read_text())
    assert [job["collected"] for job in saved["jobs"]] == [False]  # the paid answers are still to collect

    monkeypatch.setattr(cache, "set", real_set)  # space freed: the same command again
    report = await BatchRunner(backend, cache, state, poll_interval_s=0.01).run(requests)
    assert (report.submitted, report.completed, report.pending, report.failed) == (0, 3, 0, {})
    assert len(backend.submitted) == 1 and backend.fetched == ["batch-1", "batch-1"]  # fetched again, never resubmitted
    assert [json.loads(cache.get(cache_key(backend.provider, r)))["choices"][0]["text"] for r in requests] == [
        f"answer to question {i}" for i in range(3)
    ]
    assert json.loads(state.read_text())["jobs"][0]["collected"] is True


async def test_batch_mode_refuses_a_cache_that_cannot_be_read_before_submitting(tmp_path, monkeypatch):
    from judgesdk.provider.layers.batch import BatchRunner

    cache, backend = open_cache(tmp_path / "cache"), EndedBatches()

    def damaged(*args, **kwargs):
        raise sqlite3.DatabaseError("database disk image is malformed")

    monkeypatch.setattr(type(cache), "__contains__", lambda self, key: damaged())
    with pytest.raises(ConfigError, match="reading the response cache .* failed \\(database disk image is malformed\\)"):
        await BatchRunner(backend, cache, tmp_path / "state.json").run([ask(0)])
    assert backend.submitted == []  # nothing paid for
