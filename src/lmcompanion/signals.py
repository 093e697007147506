"""One signal policy for every long command, in one process or several.

SIGINT (Ctrl-C), SIGTERM (``timeout``, a scheduler, the campaign's own ``--max-minutes``) and SIGHUP (a closing
terminal) all mean the same: stop, keep what was computed, say what was kept, and exit with 128 + the signal.

- **One handler** (:func:`policy`, installed by every command of the CLI and by every worker process while it
  trains a run): a signal raises :class:`KeyboardInterrupt` (SIGINT) or :class:`~lmcompanion.errors.Terminated` (the
  others, a KeyboardInterrupt naming the signal) where the program is, except inside :func:`deferred`, where it is
  raised when the section ends. While a run trains, the trainer's own handler
  (:class:`lmcompanion.train.trainer.Interrupts`) takes over with the same meaning at a finer grain: the current step,
  its evaluation and a checkpoint finish first; a second signal stops at once, but never inside an update or a
  checkpoint write. When the trainer returns, this handler is back. Both read one table of the signals and their
  exceptions, :mod:`lmcompanion.errors`'s ``SIGNALS`` and ``signal_exception`` (here ``SIGNALS`` and
  :func:`exception`): every run's key covers that module already, and no run's key covers this one, so editing
  this policy retrains nothing.
- **What was kept** is noted where it is known (:func:`note`: the run that was stopped, and its checkpoint if it has
  one), and :func:`message` says exactly that: one message, true, with the command that resumes.
- **Child processes** stop with their parent: a pool forwards each signal to its workers (:func:`forward`; a worker
  ignores signals while it is idle, so that only its parent decides, and one whose parent died stops its run at the
  next step and exits: :func:`watch_parent`); a subprocess runs in its own process group, which is stopped whole
  (:func:`run_group`: the signal, a grace period, then SIGKILL), so nothing is left running.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable, Iterable

from .errors import SIGNALS
from .errors import signal_exception as exception  # the one table of signals and their exceptions

GRACE_S = 60.0  # how long a child may take to finish its step and checkpoint after the signal, before SIGKILL


class _State:
    def __init__(self):
        self.depth = 0  # inside deferred()
        self.pending: int | None = None  # a signal received inside deferred(), raised when it ends
        self.received: int | None = None  # the first signal of this command
        self.kept: list[str] = []  # what was kept, for the message
        self.forward: Callable[[int], None] | None = None
        self.stopping = False  # the command has reported its stop (:func:`stopping`)


_state = _State()


def signum_of(exc: BaseException) -> int:
    return getattr(exc, "signum", signal.SIGINT)


def exit_code(exc_or_signum) -> int:
    """128 + the signal: the shell's convention (130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP)."""
    signum = exc_or_signum if isinstance(exc_or_signum, int) else signum_of(exc_or_signum)
    return 128 + int(signum)


def name(signum: int) -> str:
    return "Ctrl-C (SIGINT)" if signum == signal.SIGINT else signal.Signals(signum).name


def handler(signum, frame) -> None:
    """The policy's handler (also what the campaign's own deadline raises through)."""
    if _state.received is None:
        _state.received = signum
    if _state.stopping:  # the command is already stopping and has said so: a further signal changes nothing
        return
    if _state.forward is not None:
        _state.forward(signum)
        return
    if _state.depth:
        _state.pending = _state.pending or signum
        return
    raise exception(signum)


def _main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


@contextlib.contextmanager
def policy():
    """Install the handler for SIGINT, SIGTERM and SIGHUP for the duration (outside the main thread, where signals
    cannot be handled, it does nothing). What was noted as kept starts empty. Once the command has reported its stop
    (:func:`stopping`), the handlers it restores are not given a late signal: that one is dropped."""
    global _state
    saved, _state = _state, _State()
    old = {s: signal.signal(s, handler) for s in SIGNALS} if _main_thread() else {}
    try:
        yield _state
    finally:
        stopped = _state.stopping
        for s, h in old.items():
            signal.signal(s, signal.SIG_IGN if stopped else h)
        for s, h in old.items():
            if stopped:
                signal.signal(s, h)
        _state = saved


def stopping() -> None:
    """The command stops and says so now: signals from here on are dropped (one message, one exit status)."""
    _state.stopping = True


@contextlib.contextmanager
def deferred():
    """A section no signal splits (writing what marks a run finished, a report and its archive): a signal that
    arrives inside is raised when the section ends."""
    _state.depth += 1
    try:
        yield
    finally:
        _state.depth -= 1
        if _state.depth == 0 and _state.pending is not None:
            signum, _state.pending = _state.pending, None
            raise exception(signum)


@contextlib.contextmanager
def forwarding(to: Callable[[int], None]):
    """While children finish after a signal: each further signal is passed to ``to`` (e.g. :func:`forward` to the
    workers, whose trainer then stops at once, outside an update or a checkpoint write) instead of being raised."""
    before, _state.forward = _state.forward, to
    try:
        yield
    finally:
        _state.forward = before


@contextlib.contextmanager
def unswallowed():
    """A library that catches our KeyboardInterrupt and raises its own error instead (Dynamo, while it compiles)
    does not swallow the signal: an error raised in here after a signal arrived is that signal's exception."""
    try:
        yield
    except Exception:
        if _state.received is not None and not _state.stopping:
            raise exception(_state.received) from None
        raise


def note(text: str) -> None:
    """Say what was kept (e.g. "run X: its checkpoint"); :func:`message` lists it."""
    if text not in _state.kept:
        _state.kept.append(text)


def note_run(folder: Path, checkpoint: str = "ckpt.pt") -> None:
    """Note a run stopped in ``folder``: with its checkpoint if it has one (it resumes from there), else that it
    had not finished a step to keep."""
    folder = Path(folder)
    if (folder / checkpoint).is_file():
        note(f"run {folder.name} keeps its checkpoint and resumes from it")
    else:
        note(f"run {folder.name} had no checkpoint yet (it starts again)")


def kept() -> list[str]:
    return list(_state.kept)


def message(exc: BaseException) -> str:
    """The one message of a command stopped by a signal: which signal, what was kept, and what to run."""
    what = name(signum_of(exc))
    if _state.kept:
        return (
            f"stopped by {what}: "
            + "; ".join(_state.kept[:8])
            + (f" (and {len(_state.kept) - 8} more)" if len(_state.kept) > 8 else "")
            + ". Everything finished before is kept; run the same command again to continue."
        )
    return (
        f"stopped by {what}. Everything finished before is kept (runs, records and reports are written whole or "
        "not at all); run the same command again to continue."
    )


# --- child processes ----------------------------------------------------------------------------------------------


def ignore() -> None:
    """In a worker process between tasks: the three signals are ignored (its parent decides; a terminal's Ctrl-C
    reaches the whole process group), and the policy is installed again for each task (:func:`policy`)."""
    for s in SIGNALS:
        signal.signal(s, signal.SIG_IGN)


def forward(pids: Iterable[int], signum: int) -> None:
    """Send ``signum`` to each process of ``pids`` that is still there."""
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signum)


class _Watch:
    busy = False


watch_state = _Watch()


def watch_parent(poll_s: float = 1.0) -> None:
    """In a worker: a daemon thread that notices its parent died (killed with SIGKILL, say) and then stops the worker:
    at once when it is idle, else after SIGTERM to itself has stopped its run at the next step with a checkpoint."""
    parent = os.getppid()

    def watch():
        signalled = False
        while True:
            time.sleep(poll_s)
            if os.getppid() == parent:
                continue
            if not watch_state.busy:
                os._exit(128 + signal.SIGTERM)
            if not signalled:
                signalled = True
                with contextlib.suppress(OSError):
                    os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, daemon=True, name="lmc-watch-parent").start()


def stop_group(proc: subprocess.Popen, signum: int = signal.SIGTERM, grace: float = GRACE_S) -> None:
    """Stop a child started with ``start_new_session=True`` and everything it started: ``signum`` to its process
    group, up to ``grace`` seconds to finish, then SIGKILL to the group."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        pgid = None
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signum)
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        pass
    if pgid is not None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pgid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=10)


def run_group(cmd, *, timeout: float | None = None, grace: float = GRACE_S, **kw) -> subprocess.CompletedProcess:
    """:func:`subprocess.run` with ``capture_output`` and text, in a new process group that is stopped whole on a
    timeout or a signal (the same signal, then SIGKILL after ``grace`` s): torchrun's workers, say, never outlive it."""
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True, **kw
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        stop_group(proc, signal.SIGTERM, grace)
        out, err = proc.communicate()
        raise subprocess.TimeoutExpired(cmd, timeout, out, err) from None
    except BaseException as exc:
        stop_group(proc, signum_of(exc) if isinstance(exc, KeyboardInterrupt) else signal.SIGTERM, grace)
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


__all__ = [
    "GRACE_S",
    "SIGNALS",
    "deferred",
    "exception",
    "exit_code",
    "forward",
    "forwarding",
    "handler",
    "ignore",
    "kept",
    "message",
    "name",
    "note",
    "note_run",
    "policy",
    "run_group",
    "signum_of",
    "stop_group",
    "stopping",
    "unswallowed",
    "watch_parent",
]
