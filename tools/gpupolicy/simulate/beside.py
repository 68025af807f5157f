"""One replay run beside another: `simulate` replays a baseline and a policy (and with `--busy-devices` two
more) that share nothing but their inputs, so on a machine with a second core one of them runs in a forked
child while this process runs the other.

A forked child inherits the jobs and policies as they are (nothing is pickled on the way in; on the way out,
only the answer is), and it computes the same thing it would here: a replay reads nothing but its arguments.
Objects both sides already hold (`shared`: the jobs, which a replay's answer refers to run by run) go back
as their index in that list, not as copies: unpickling 69,351 jobs the parent has was most of the time it
waited for a replay of the Microsoft ITP trace.
Where forking is not safe or not worth it (not Linux: macOS offers `fork` but its system libraries do not
survive it, which is why CPython spawns there; one core; other threads running, which a fork would copy in
whatever state they hold), the call runs here, when its answer is asked for. A child that dies
without an answer is an error the user sees, never a missing replay.
"""

from __future__ import annotations

import io
import multiprocessing
import os
import pickle
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from ..errors import ToolError
from .collector import collector_paused


def _can_fork() -> bool:
    return (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
    )


def started(call: Callable[..., Any], *args: Any, shared: Sequence = ()) -> Callable[[], Any]:
    """`call(*args)` started beside this process; the function returned gives its answer (or raises what it
    raised), waiting for it if need be. Ask for the answer once. Objects of `shared` in the answer come back
    as the very objects of `shared` here."""
    if not _can_fork():
        return lambda: call(*args)
    context = multiprocessing.get_context("fork")
    answers, answer_end = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(answer_end, call, args, shared), daemon=True)
    child.start()
    answer_end.close()

    def answer() -> Any:
        try:
            ok, value = _load(answers.recv_bytes(), shared)
        except EOFError:
            child.join()
            raise ToolError(
                f"a replay run beside this one stopped without an answer (exit code {child.exitcode})"
            ) from None
        finally:
            answers.close()
        child.join()
        if not ok:
            raise value
        return value

    return answer


def _answer(answer_end, call: Callable[..., Any], args: tuple, shared: Sequence) -> None:
    try:
        reply = (True, call(*args))
    except Exception as exc:  # sent back and raised where the answer is read
        reply = (False, exc)
    try:
        answer_end.send_bytes(_dumps(reply, shared))
    except Exception as exc:  # an answer or an exception that does not pickle
        error = ToolError(f"a replay run beside this one could not send its answer: {exc}")
        answer_end.send_bytes(_dumps((False, error), ()))
    finally:
        answer_end.close()


def _dumps(reply: tuple, shared: Sequence) -> bytes:
    buffer = io.BytesIO()
    _Dumps(buffer, shared).dump(reply)
    return buffer.getvalue()


class _Dumps(pickle.Pickler):
    """Pickles an object of `shared` as its index there (both processes hold the list since the fork)."""

    def __init__(self, buffer: io.BytesIO, shared: Sequence) -> None:
        super().__init__(buffer, protocol=pickle.HIGHEST_PROTOCOL)
        self.indexes = {id(item): index for index, item in enumerate(shared)}

    def persistent_id(self, obj: Any) -> int | None:
        return self.indexes.get(id(obj))


def _load(data: bytes, shared: Sequence) -> Any:
    with collector_paused():  # an answer builds many objects and no cycles (collector.py)
        return _Loads(io.BytesIO(data), shared).load()


class _Loads(pickle.Unpickler):
    def __init__(self, buffer: io.BytesIO, shared: Sequence) -> None:
        super().__init__(buffer)
        self.shared = shared

    def persistent_load(self, index: int) -> Any:
        return self.shared[index]
