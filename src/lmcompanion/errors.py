"""Exceptions that carry the fix in their message.

Every user-facing failure in the package raises one of these, so the CLI and the notebooks can show a
short message (what is wrong and how to fix it) instead of a traceback from deep inside a library.

A signal that stops a command or a run is one too (:data:`SIGNALS`, :func:`signal_exception`): the table lives here,
below both the command line's signal policy (:mod:`lmcompanion.signals`) and the trainer, so that both read one table
and the trainer's run key never covers the policy's code.
"""

import signal


class LMCError(Exception):
    """Base class: the message names the problem and the fix."""


class ConfigError(LMCError, ValueError):
    """An unknown name, a value of the wrong type, or an impossible combination of settings."""


class DataError(LMCError):
    """A corpus, split or tokenizer that cannot be found or built."""


class CheckpointError(LMCError):
    """A checkpoint that cannot be read, or that belongs to another run."""


class TrainingDiverged(LMCError):
    """The loss became NaN or infinite; the last good checkpoint and the metrics are kept."""


class OutOfMemory(LMCError):
    """A step, an evaluation or a model did not fit in memory; the message names what ran out and what to lower."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP (a scheduler, ``timeout``, a closing terminal), handled as Ctrl-C is: the current step and
    its checkpoint finish, then the run stops."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


# The signals that stop a command or a run (those this platform has): Ctrl-C, SIGTERM (a scheduler, ``timeout``) and
# SIGHUP (a closing terminal).
SIGNALS = tuple(getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name))


def signal_exception(signum: int) -> KeyboardInterrupt:
    """The exception a signal of :data:`SIGNALS` raises: KeyboardInterrupt for SIGINT, :class:`Terminated` (naming
    it) for the others."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)
