"""What ``judgesdk serve`` is told: where it listens, who may call it, how much it takes, what it records."""

from __future__ import annotations

import ipaddress
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["DEFAULT_PORT", "ServeSettings"]

DEFAULT_PORT = 8177


class ServeSettings(BaseModel):
    """The server's settings; the judge itself comes from a judge config (``config``: none for the embedded one).

    ``api_key_env`` names the variable holding the bearer key callers must send (the key is never a flag or a
    config value). ``concurrency`` requests are judged at once and ``queue`` more may wait; one more is answered
    429 with ``Retry-After``. ``timeout_s`` bounds one request's judging (504 past it). ``grace_s`` is how long
    SIGTERM waits for requests in flight (those still in flight after it are answered 503).

    Against slow and half-open clients (issue 41): a connection must send its request header within
    ``header_timeout_s`` and an admitted request its body within ``body_timeout_s`` (408 past it); at most
    ``max_connections`` connections are held at once (None: derived from ``ulimit -n``, so that accepting a
    connection never runs out of file descriptors; :mod:`judgesdk.serve.connections`).
    """

    model_config = ConfigDict(extra="forbid")

    config: Path | None = None
    host: str = "127.0.0.1"
    port: int = Field(default=DEFAULT_PORT, ge=0, le=65535)
    name: str = Field(default="judgesdk", min_length=1)  # the model name clients send, listed by GET /v1/models
    api_key_env: str | None = None
    max_body_bytes: int = Field(default=1 << 20, ge=1024)
    max_questions: int = Field(default=128, ge=1, le=400)  # LiteLLM's cap by default, so its proxy's requests fit
    concurrency: int = Field(default=4, ge=1)
    queue: int = Field(default=32, ge=0)
    timeout_s: float = Field(default=300.0, gt=0)
    grace_s: float = Field(default=30.0, ge=0)
    header_timeout_s: float = Field(default=10.0, gt=0)
    body_timeout_s: float = Field(default=60.0, gt=0)
    max_connections: int | None = Field(default=None, ge=8)
    record: Path | None = None
    allow_unfitted: bool = False
    max_tokens: int | None = Field(default=None, ge=1)  # a budget for the server's life: tokens billed, then 503
    max_usd: float | None = Field(default=None, gt=0)

    @property
    def loopback(self) -> bool:
        """Whether ``host`` is only reachable from this machine."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False
