"""One replay run beside another: `simulate` replays a baseline and a policy (and with `--busy-devices` two
more) that share nothing but their inputs, so on a machine with a second core one of them runs in a forked
child while this process runs the other.

A forked child inherits the jobs and policies as they are (nothing is pickled on the way in; on the way out,
only the answer is), and it computes the same thing it would here: a replay reads nothing but its arguments.
Where forking is not safe or not worth it (not Linux: macOS offers `fork` but its system libraries do not
survive it, which is why CPython spawns there; one core; other threads running, which a fork would copy in
whatever state they hold), the call runs here, when its answer is asked for. A child that dies
without an answer is an error the user sees, never a missing replay.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

from ..errors import ToolError


def _can_fork() -> bool:
    return (
        sys.platform.startswith("linux")
        and "fork" in multiprocessing.get_all_start_methods()
        and (os.cpu_count() or 1) > 1
        and threading.active_count() == 1
    )


def started(call: Callable[..., Any], *args: Any) -> Callable[[], Any]:
    """`call(*args)` started beside this process; the function returned gives its answer (or raises what it
    raised), waiting for it if need be. Ask for the answer once."""
    if not _can_fork():
        return lambda: call(*args)
    context = multiprocessing.get_context("fork")
    answers, answer_end = context.Pipe(duplex=False)
    child = context.Process(target=_answer, args=(answer_end, call, args), daemon=True)
    child.start()
    answer_end.close()

    def answer() -> Any:
        try:
            ok, value = answers.recv()
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


def _answer(answer_end, call: Callable[..., Any], args: tuple) -> None:
    try:
        reply = (True, call(*args))
    except Exception as exc:  # sent back and raised where the answer is read
        reply = (False, exc)
    try:
        answer_end.send(reply)
    except Exception as exc:  # an answer or an exception that does not pickle
        answer_end.send((False, ToolError(f"a replay run beside this one could not send its answer: {exc}")))
    finally:
        answer_end.close()
