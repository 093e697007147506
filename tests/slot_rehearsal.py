"""The GPU slot rehearsed on the CPU as it will run there (``make slot-rehearsal``; README, "A GPU slot").

From a fresh clone of the repository's last commit ("here"), at the smoke profile with one seed per arm:

1. the pack is made here (``campaign --pack _pack``);
2. slot 1 runs in a second fresh clone ("the device": the committed tree and the carried pack only; no ``../shared``,
   an empty run store, cache and Inductor cache, the hub off), with the README's command but for the profile:
   ``campaign --from-pack _pack --max-minutes M --archive OUT/slot.tgz``. One of its runs is made slow (a training
   callback holds it until just after the limit: a GPU run longer than its estimate), so the time limit fires in the
   middle of that run: the command stops with exit 75 and the archive holds every step finished before;
3. here, ``campaign --restore OUT/slot.tgz --commit``: the archive checked, restored into ``book/recorded`` and
   committed with a message naming the slot and the device;
4. slot 2 runs in a third fresh clone, of that commit, with the same command: its first run is the run that was
   cut off, from scratch (after the check of the families slot 1 did not train), and does not run again what slot 1 finished; it is restored and committed the same way;
5. here, ``campaign --plan`` reads the measured minutes of the two slots.

Every assertion names what failed. It takes a few minutes on two cores (the check's compile and torchrun most of it).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MAX_MINUTES = 1.5  # slot 1's limit: the check, the GPT-2-small bench and a run fit; the slow run is cut off
BUDGET = "2.5"  # estimated minutes of a slot (smoke estimates: enough steps that the limit falls inside slot 1)
SLOW = 2  # slot 1's second run is the slow one
GIT_ID = {"GIT_AUTHOR_NAME": "slot rehearsal", "GIT_AUTHOR_EMAIL": "rehearsal@localhost",
          "GIT_COMMITTER_NAME": "slot rehearsal", "GIT_COMMITTER_EMAIL": "rehearsal@localhost"}


def device_main(argv: list[str]) -> int:
    """Inside the device's clone: the command, with the ``SLOW``-th run held until just after the time limit
    (``--slow-until`` seconds from now; 0: no slow run)."""
    until = time.monotonic() + float(argv[1]) + 60  # a bound, in case the limit never fires
    args = argv[argv.index("--") + 1:]
    from lmcompanion import cli
    from lmcompanion.campaign import runner

    real, count, deadlines = runner.train_run, [0], []

    class Deadline(runner._Deadline):  # the command's own time limit, seen by the hold below
        def __init__(self, seconds):
            super().__init__(seconds)
            deadlines.append(self)

    runner._Deadline = Deadline

    def train_run(run, progress):
        count[0] += 1
        if float(argv[1]) <= 0 or count[0] != SLOW:
            return real(run, progress)
        print(f"rehearsal: {run.id} is slow (held until the time limit has fired)", flush=True)

        def hold(step):  # after each training step: wait until the command's time limit has fired
            while not (deadlines and deadlines[0].fired) and time.monotonic() < until:
                time.sleep(0.2)

        return run.train(runner.RunStore(), progress=progress, callbacks=(hold,))

    runner.train_run = train_run
    return cli.main(args)


def _run(cmd, cwd, env, what, ok=(0,)):
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    text = proc.stdout + proc.stderr
    if proc.returncode not in ok:
        raise SystemExit(f"slot rehearsal: {what} ended with exit {proc.returncode} (expected {ok}):\n{text[-6000:]}")
    print(f"  {what}: exit {proc.returncode} in {time.monotonic() - t0:.0f} s", flush=True)
    return proc.returncode, text


def check(condition, message):
    if not condition:
        raise SystemExit(f"slot rehearsal FAILED: {message}")


def _wheels(tmp: Path) -> Path:
    shared = REPO.parent / "shared" / "wheels" / "py312-x86_64"
    if list(shared.glob("*.whl")):
        return shared
    folder = tmp / "wheels" / "py312-x86_64"  # no ../shared here: one empty wheel stands in (none is installed)
    folder.mkdir(parents=True)
    (folder / "demo-1.0-py3-none-any.whl").write_bytes(b"PK\x05\x06" + bytes(18))
    return folder


def main() -> int:
    t_start = time.monotonic()
    tmp = Path(tempfile.mkdtemp(prefix="lmc-slot-rehearsal-"))
    try:
        base = {k: v for k, v in os.environ.items() if not k.startswith(("LMC_", "PYTHONPATH", "GIT_"))}
        base.update(OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), LMC_PROGRESS="0", PYTHONUNBUFFERED="1",
                    **GIT_ID)
        here = tmp / "here"
        _run(["git", "clone", "-q", str(REPO), str(here)], tmp, base, "a fresh clone of the last commit")
        env_here = {**base, "PYTHONPATH": str(here / "src"), "LMC_RUNS_DIR": str(tmp / "runs-here"),
                    "LMC_CACHE_DIR": str(tmp / "cache-here")}
        data = Path(os.environ.get("LMC_DATA_DIR") or REPO.parent / "shared" / "data")
        if data.is_dir():  # the pack is made where the offline corpora are (README); the device has only the pack
            env_here["LMC_DATA_DIR"] = str(data.resolve())
        py = [sys.executable, "-m", "lmcompanion", "campaign", "--profile", "smoke", "--seeds", "1"]
        _run(py + ["--pack", "_pack", "--wheels", str(_wheels(tmp))], here, env_here, "the pack, made here")
        command = ["campaign", "--profile", "smoke", "--device", "cpu", "--seeds", "1", "--from-pack", "_pack",
                   "--budget-min", BUDGET, "--max-minutes", str(MAX_MINUTES)]
        texts = []
        for slot, slow in ((1, MAX_MINUTES * 60 + 1), (2, 0)):
            device, out = tmp / f"device{slot}", tmp / f"OUT{slot}"
            out.mkdir()
            _run(["git", "clone", "-q", str(here), str(device)], tmp, base, f"slot {slot}: the device's tree")
            shutil.copytree(here / "_pack", device / "_pack")  # the carried folder
            env_dev = {**base, "PYTHONPATH": str(device / "src"), "LMC_RUNS_DIR": str(device / "fresh-runs"),
                       "LMC_CACHE_DIR": str(device / "fresh-cache"), "HF_HUB_OFFLINE": "1",
                       "HF_DATASETS_OFFLINE": "1", "TORCHINDUCTOR_CACHE_DIR": str(device / "fresh-inductor")}
            code, text = _run([sys.executable, "tests/slot_rehearsal.py", "device", str(slow), "--", *command,
                               "--archive", str(out / "slot.tgz")], device, env_dev, f"slot {slot} on the device",
                              ok=(0, 75))
            (out / "campaign.log").write_text(text)
            texts.append(text)
            check(len(list(out.iterdir())) <= 8, f"slot {slot} brings back more than 8 files")
            if slot == 1:
                cut = re.search(r"rehearsal: (\S+) is slow", text)
                check(code == 75 and cut and f"interrupted during {cut.group(1)}" in text,
                      f"slot 1 was not cut off in the middle of its slow run (exit {code}):\n{text[-3000:]}")
                cut = cut.group(1)
                finished = re.findall(r"^\[\d+/\d+\] run (\S+)", text.split(f"run {cut} ")[0], re.M)
                check(finished, "slot 1 finished no run before the cut")
            else:
                started = re.findall(r"^\[\d+/\d+\] run (\S+)", text, re.M)  # (after a check of new families)
                check(started and started[0] == cut, f"slot 2's first run is not the run cut off ({cut}): "
                                                     f"{started[:3]}")
                check(not set(started) & set(finished), "slot 2 ran again what slot 1 had finished")
                check(re.search(rf"run {re.escape(cut)} .*\n(?:    .*\n)*?    done in", text),
                      f"slot 2 did not finish {cut}")
            _, restored = _run([sys.executable, "-m", "lmcompanion", "campaign", "--restore", str(out / "slot.tgz"),
                                "--commit"], here, env_here, f"slot {slot}: restored and committed here")
            head = subprocess.run(["git", "-C", str(here), "log", "-1", "--format=%s"], capture_output=True,
                                  text=True).stdout
            check(head.startswith(f"Recorded GPU campaign, slot {slot} on cpu (smoke profile)"),
                  f"the commit of slot {slot} does not name it and its device: {head!r}")
            status = subprocess.run(["git", "-C", str(here), "status", "--porcelain"], capture_output=True,
                                    text=True).stdout
            check(status.strip() == "", f"slot {slot} left files uncommitted:\n{status}")
        recorded = here / "book" / "recorded"
        sys.path.insert(0, str(here / "src"))
        from lmcompanion import campaign

        by_id = {s.name: s for s in campaign.steps("smoke", device="cpu", seeds=1)}
        for name in [cut, *finished]:
            check(campaign.is_recorded(recorded, by_id[name].run), f"{name} is not recorded in {recorded}")
        progress = json.loads((recorded / "campaign" / "smoke" / "progress.json").read_text())
        check([c["slot"] for c in progress["commands"]] == [1, 2], f"progress names slots {progress['commands']}")
        check(progress["steps"][cut]["attempts"] == 2 and progress["steps"][cut]["status"] == "done",
              f"the cut run: {progress['steps'][cut]}")
        report = json.loads((recorded / "campaign" / "smoke" / "check.json").read_text())
        failed = {k: v.get("error") for k, v in report["items"].items() if not v.get("ok")}
        check(report["ok"] and not failed and set(report["items"]) == {
            "autocast_and_fused_adamw", "compile_against_eager", "sdpa", "torchrun_gloo"},
              f"the two slots' check (merged) failed: {failed}")
        minutes = json.loads((recorded / "campaign" / "smoke" / "minutes.json").read_text())["measured"]
        check(sum(1 for k in minutes if k.startswith("run/")) >= len(finished) + 1 and "check/base" in minutes,
              f"minutes.json lacks the measured runs or the check: {sorted(minutes)}")
        # the next plan with a second seed per arm: the runs whose first seed the slots measured are estimated by it
        _, plan = _run(py[:-1] + ["2", "--device", "cpu", "--plan", "--budget-min", BUDGET], here, env_here,
                       "the next plan, here (two seeds per arm)")
        m = re.search(r"estimates: (\d+) measured by earlier slots", plan)
        check(m and int(m.group(1)) >= len(finished) + 1 and re.search(rf"{re.escape(cut.split('-s')[0])}-s1@\S+ .* "
                                                                        "min  measured ", plan),
              f"the next plan does not read the measured minutes:\n{plan[:3000]}")
        print(f"slot rehearsal passed in {time.monotonic() - t_start:.0f} s: slot 1 cut off in {cut} after "
              f"{len(finished)} run(s), restored and committed; slot 2 began with it; the check covers "
              f"{', '.join(report['families'])}; the next plan has {m.group(1)} measured estimate(s)")
        print(plan.split("\n\n")[0])
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "device":
        sys.exit(device_main(sys.argv[1:]))
    sys.exit(main())
