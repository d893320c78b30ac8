"""``judgesdk serve``: answer decision requests (OpenAI Decisions, System One) with a judge, on 127.0.0.1.

    judgesdk serve [--config JUDGE.toml] [--host 127.0.0.1] [--port 8177] [--api-key-env VAR] [--record results.jsonl]

The server, its routes, status codes and record are :mod:`judgesdk.serve`'s. Without ``--config`` the embedded
local judge answers (the fused judge on the criteria it has fits for). Exit codes: 0 stopped cleanly (SIGTERM,
Ctrl-C), 1 stopped, but some served judgement could not be recorded (``--record`` on a full disk), 3 a
configuration error before it listened (no usable judge, an unset key variable or one with whitespace around the
key, a record file another run holds, a port in use, a host that does not resolve, the serve extra not installed).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from judgesdk.core import ConfigError, ExitCode

__all__ = ["register", "run_serve"]


def register(commands: Any) -> None:
    """Add ``serve`` to an ``argparse`` subparsers object."""
    from judgesdk.serve import DEFAULT_PORT

    p = commands.add_parser("serve", help="answer decision requests (POST /v1/decisions, /v1/systemone) with a judge")
    p.add_argument("--config", type=Path, help="judge config (TOML/YAML); default: the embedded local judge")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)")
    p.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT}; 0: any free port)")
    p.add_argument("--name", default="judgesdk", help="the model name clients send and GET /v1/models lists (default judgesdk)")
    p.add_argument("--api-key-env", metavar="VAR", help="require Authorization: Bearer <the key in $VAR> (never pass a key itself)")
    p.add_argument("--max-body-bytes", type=int, default=1 << 20, help="largest request body taken (default 1 MiB; 413 above)")
    p.add_argument("--max-questions", type=int, default=128, help="most questions a request may ask (default 128, LiteLLM's cap; 400 above)")
    p.add_argument("--concurrency", type=int, default=4, help="requests judged at once (default 4)")
    p.add_argument("--queue", type=int, default=32, help="requests that may wait for a slot (default 32; 429 with Retry-After beyond)")
    p.add_argument("--timeout-s", type=float, default=300.0, help="longest one request may take to judge (default 300; 504 past it)")
    p.add_argument("--grace-s", type=float, default=30.0, help="how long SIGTERM waits for requests in flight (default 30; 503 to those past it)")
    p.add_argument("--header-timeout-s", type=float, default=10.0, help="longest a connection may take to send its request header (default 10; then closed)")
    p.add_argument("--body-timeout-s", type=float, default=60.0, help="longest an admitted request may take to send its body (default 60; 408 past it)")
    p.add_argument(
        "--max-connections", type=int,
        help="most connections held at once (default: from ulimit -n); past it the oldest one still sending its header is closed",
    )  # fmt: skip
    p.add_argument("--max-tokens", type=int, help="a budget for the server's life: tokens billed by the judge's model calls (cache hits free); 503 once spent")
    p.add_argument("--max-usd", type=float, help="the same budget in USD (needs a priced model: LiteLLM's price map)")
    p.add_argument("--record", type=Path, metavar="RESULTS.jsonl", help="append every served judgement here, as judgesdk score -o writes them")
    p.add_argument(
        "--allow-unfitted", action="store_true",
        help="with the embedded judge, answer questions it has no fit for with its prompted method (flagged unfitted) instead of refusing them",
    )  # fmt: skip
    p.set_defaults(func=run_serve)


def run_serve(args: argparse.Namespace) -> int:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"judgesdk serve needs the serve extra ({exc.name} is missing): pip install 'judgesdk[serve]'") from None
    from pydantic import ValidationError

    from judgesdk.judging import validation_summary
    from judgesdk.serve import ServeSettings, serve

    try:
        settings = ServeSettings(
            config=args.config, host=args.host, port=args.port, name=args.name, api_key_env=args.api_key_env,
            max_body_bytes=args.max_body_bytes, max_questions=args.max_questions, concurrency=args.concurrency, queue=args.queue,
            timeout_s=args.timeout_s, grace_s=args.grace_s, record=args.record, allow_unfitted=args.allow_unfitted,
            max_tokens=args.max_tokens, max_usd=args.max_usd, header_timeout_s=args.header_timeout_s,
            body_timeout_s=args.body_timeout_s, max_connections=args.max_connections,
        )  # fmt: skip
    except ValidationError as exc:
        raise ConfigError(f"judgesdk serve: {validation_summary(exc)}") from None
    return ExitCode.OK if serve(settings) == 0 else ExitCode.FAILED
