"""The GPU campaign (``python -m lmcompanion campaign``; issues 27 and 35): the runs that decide the chapters'
headline claims at the gpu profile, in slots that fit one short loan of a GPU machine, packed and rehearsed without
a GPU. Its parts, each readable on its own:

- :mod:`.plan`: what is left to run, in priority order, cut into slots of at most 8 estimated H100 minutes (measured
  minutes of earlier slots in place of counted ones), and ``--plan``'s listing;
- :mod:`.check`: the CUDA-path check of the families a slot trains (autocast, fused AdamW, compile against eager,
  SDPA kernels, torchrun);
- :mod:`.bench`: the GPT-2-small bench (the MFU figure) and the chapters' benches that fill a slot's last minutes;
- :mod:`.lanes`: the runs of a slot side by side on its one device, and the speed-up that gives (measured by the
  first slot on a device, assumed until then);
- :mod:`.runner`: one slot as one command, from what the output folder (``book/recorded``) holds, its runs in lanes,
  with its time limit and its archive of what it made;
- :mod:`.restore`: that archive, back here, checked, restored and committed;
- :mod:`.pack`: the wheels, corpus files and token caches a GPU machine without network needs;
- :mod:`.reports`: the campaign's files in the output folder (progress, check, bench, measured minutes, lanes).
"""

from __future__ import annotations

from .bench import BENCH, RANDOM_TOKENS, RandomTokens, gpt2_small
from .check import CHECK_BASE_S, CHECK_COMPILE_S, CHECK_TORCHRUN_S, COMPILE_RTOL, FAMILY_CASES, one_step
from .pack import PACK_FORMAT, PACK_LIMIT, check_keys, default_data_dir, default_wheels, make_pack, unpack, verify_pack
from .plan import (
    DEFAULT_SLOT_MIN,
    GROUPS,
    Group,
    Plan,
    Slot,
    Step,
    group_claims,
    passes,
    passes_table,
    print_plan,
    slot_device,
    slots,
    steps,
)
from .reports import MINUTES_FORMAT, PROGRESS_FORMAT, Minutes, is_recorded, reports_dir
from .runner import MORE_TO_DO, Progress, run

# The submodules (plan, check, bench, lanes, runner, restore, pack, reports) are attributes of the package; no name
# above shadows one of them.
from . import lanes, restore  # noqa: E402,F401  (campaign.restore.restore: the --restore command)

__all__ = [
    "BENCH",
    "CHECK_BASE_S",
    "CHECK_COMPILE_S",
    "CHECK_TORCHRUN_S",
    "COMPILE_RTOL",
    "DEFAULT_SLOT_MIN",
    "FAMILY_CASES",
    "GROUPS",
    "Group",
    "MINUTES_FORMAT",
    "MORE_TO_DO",
    "Minutes",
    "PACK_FORMAT",
    "PACK_LIMIT",
    "PROGRESS_FORMAT",
    "Plan",
    "Progress",
    "RANDOM_TOKENS",
    "RandomTokens",
    "Slot",
    "Step",
    "check_keys",
    "default_data_dir",
    "default_wheels",
    "gpt2_small",
    "group_claims",
    "is_recorded",
    "make_pack",
    "one_step",
    "passes",
    "passes_table",
    "print_plan",
    "reports_dir",
    "run",
    "slot_device",
    "slots",
    "steps",
    "unpack",
    "verify_pack",
]
