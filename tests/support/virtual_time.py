"""An event loop on virtual time: its clock jumps to the next timer, so sleeps, timeouts and back-off cost no real
time and every run takes the same course (no assertion depends on the machine's speed)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop whose clock jumps to the next timer instead of waiting for it."""

    def __init__(self) -> None:
        super().__init__()
        self._now = 0.0
        select = self._selector.select

        def jump(timeout: float | None = None) -> Any:
            if timeout is not None and timeout > 0:
                self._now += timeout
            return select(None if timeout is None else 0)

        self._selector.select = jump  # type: ignore[method-assign]

    def time(self) -> float:
        return self._now


def virtual(coro: Coroutine[Any, Any, T]) -> T:
    loop = VirtualLoop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()
