"""The typed errors (judgesdk.core.errors): HTTP failures classified once for every backend, what is retried and
what never is, Retry-After read, and which exceptions raised while judging one item are that item's failure."""

from __future__ import annotations

import asyncio
import threading

import pytest

from judgesdk.core.errors import (
    AuthError,
    CapabilityError,
    ConfigError,
    InputError,
    JudgeSDKError,
    MissingDependencyError,
    MissingItemField,
    PermanentError,
    ProviderError,
    QuotaExhaustedError,
    RateLimitError,
    RetriesExhaustedError,
    TransientError,
    UnavailableError,
    error_from_status,
    parse_retry_after,
    stray,
    stray_message,
)


@pytest.mark.parametrize(
    "status,kind",
    [(408, TransientError), (409, TransientError), (429, RateLimitError), (500, TransientError), (503, TransientError),
     (400, PermanentError), (401, AuthError), (403, AuthError), (404, PermanentError), (402, QuotaExhaustedError)],
)  # fmt: skip
def test_status_classification(status, kind):
    err = error_from_status(status, "boom", provider="x")
    assert type(err) is kind and err.status == status and err.provider == "x" and "x: HTTP" in str(err)


def test_quota_exhausted_429_is_permanent():
    err = error_from_status(429, "You exceeded your current quota", provider="x", body={"code": "insufficient_quota"})
    assert isinstance(err, QuotaExhaustedError) and not isinstance(err, TransientError)


def test_retry_after_header_is_read():
    err = error_from_status(429, "slow down", provider="x", headers={"retry-after": "2"})
    assert err.retry_after == 2.0
    err = error_from_status(503, "busy", provider="x", headers={"retry-after-ms": "250"})
    assert err.retry_after == 0.25


def test_retry_after_in_the_past_or_unreadable_is_no_wait_or_none():
    assert parse_retry_after({"retry-after": "-5"}) == 0.0  # never a negative wait
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) == 0.0  # a date in the past
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after(None) is None and parse_retry_after(object()) is None  # no headers, or no mapping


def test_every_error_is_a_judgesdk_error_and_the_retry_split_is_by_type():
    assert issubclass(ConfigError, ValueError) and issubclass(MissingDependencyError, ImportError)
    assert not issubclass(InputError, ValueError)  # pydantic would wrap a ValueError raised in a validator
    for kind in (InputError, ConfigError, MissingDependencyError, ProviderError, MissingItemField):
        assert issubclass(kind, JudgeSDKError)
    for kind in (UnavailableError, AuthError, QuotaExhaustedError, CapabilityError):
        assert issubclass(kind, PermanentError) and not issubclass(kind, TransientError)
    last = RateLimitError("429", status=429, provider="p", retry_after=1.0)
    exhausted = RetriesExhaustedError("gave up", attempts=4, last=last)
    assert (exhausted.status, exhausted.provider, exhausted.attempts, exhausted.last) == (429, "p", 4, last)
    assert MissingItemField("no source", fields=["source", "reference"]).fields == ("source", "reference")


def test_what_ends_one_item_and_what_stops_the_run():
    assert stray(SystemExit(2)) and stray(GeneratorExit())
    assert not stray(KeyboardInterrupt())  # on the main thread: a real Ctrl-C, the run stops
    seen: list[bool] = []
    worker = threading.Thread(target=lambda: seen.append(stray(KeyboardInterrupt())))
    worker.start()
    worker.join()
    assert seen == [True]  # off the main thread it can only be that item's code
    assert not stray(ValueError("a bug"))  # an Exception is caught as one anyway
    assert not stray(asyncio.CancelledError())  # outside a loop: taken as a real cancellation
    assert stray_message(SystemExit("bye")) == "SystemExit (bye) was raised while judging this item: it ended this item only"
    assert stray_message(GeneratorExit()).startswith("GeneratorExit was raised")
