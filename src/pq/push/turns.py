"""`Turns`: the places among the running push checks, given out in the order asked for."""

from __future__ import annotations

import threading


class Turns:
    """A semaphore whose places go out in the order they were asked for (a plain one wakes
    any waiter): the checks start in registry order, and an interrupt in one is seen by
    every check that would start after it."""

    def __init__(self, places: int) -> None:
        self._free = places
        self._line: list[object] = []
        self._turn = threading.Condition()
        self._closed = False

    def ask(self) -> object:
        """A place in the line, kept by whoever will `acquire` with it."""
        with self._turn:
            self._line.append(ticket := object())
            return ticket

    def acquire(self, ticket: object | None = None) -> None:
        ticket = ticket if ticket is not None else self.ask()
        with self._turn:
            self._turn.wait_for(lambda: self._closed or (
                self._free > 0 and self._line[0] is ticket))
            if self._closed:
                return
            self._line.pop(0)
            self._free -= 1
            self._turn.notify_all()  # the next in line may have a place too

    def release(self) -> None:
        with self._turn:
            self._free += 1
            self._turn.notify_all()

    def close(self) -> None:
        """Let every waiter go at once (run_checks stops: they start nothing)."""
        with self._turn:
            self._closed = True
            self._turn.notify_all()
