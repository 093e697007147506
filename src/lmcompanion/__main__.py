import sys

from . import signals

with signals.policy():  # a signal while the package imports (seconds: torch) is answered like any other
    try:
        from .cli import main
    except KeyboardInterrupt as exc:
        print(signals.message(exc), file=sys.stderr)
        sys.exit(signals.exit_code(exc))

try:
    code = main()
except KeyboardInterrupt as exc:  # a signal in the instant between the command's end and the process's
    code = signals.exit_code(exc)
sys.exit(code)
