"""The GPU slot rehearsed on the CPU as it will run there (``make slot-rehearsal``; docs/campaign.md).

From a fresh clone of the repository's last commit ("here"), at the smoke profile with one seed per arm and two
lanes (two runs side by side, a process each):

1. the pack is made here (``campaign --pack _pack``);
2. slot 1 runs in a second fresh clone ("the device": the committed tree and the carried pack only; no ``../shared``,
   an empty run store, cache and Inductor cache, the hub off), with the README's command but for the profile and
   ``--lanes 2``: the check, the lanes' speed measured (1 and 2 lanes: the CPU's two cores) and filed in
   ``lanes.json``, the GPT-2-small bench, then the runs in two lanes. Once a run of the slot is recorded, every run
   is slow (a training callback holds each step until the command's time limit has fired: GPU runs longer than their
   estimates), so the limit fires with both lanes busy: the command stops with exit 75, both runs in flight are
   interrupted (each finishes its step and checkpoint), and the archive holds every step and run finished before;
3. here, ``campaign --restore OUT/slot.tgz --commit``: the archive checked, restored into ``book/recorded`` and
   committed with a message naming the slot and the device;
4. slot 2 runs in a third fresh clone, of that commit, with the same command: its first runs are the two runs that
   were cut off, from scratch (after the check of the families slot 1 did not train), and it runs nothing slot 1
   finished; it is restored and committed the same way;
5. here, ``campaign --plan`` reads the measured minutes and the measured lane speed of the two slots.

Every assertion names what failed. It takes several minutes on two cores (the check's compile and torchrun most of
slot 1, then the time limit).
"""

from __future__ import annotations

import functools
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
MAX_MINUTES = 6.0  # slot 1's limit: set-up (the pack, the keys), the check, the lanes, the bench and a run fit
BUDGET = "4"  # estimated minutes of a slot (smoke estimates: enough runs that the limit falls inside slot 1)
LANES = "2"
HOLD_S = 300  # the longest a held step waits for the time limit (a bound, in case it never fires)
GIT_ID = {
    "GIT_AUTHOR_NAME": "slot rehearsal",
    "GIT_AUTHOR_EMAIL": "rehearsal@localhost",
    "GIT_COMMITTER_NAME": "slot rehearsal",
    "GIT_COMMITTER_EMAIL": "rehearsal@localhost",
}


def hold(step: int) -> None:
    """In a lane of slot 1, after each training step: once a run of the slot is recorded, hold until the command's
    time limit has fired (the device's ``SLOT_REHEARSAL_*`` folders; see the module doc)."""
    if not any(Path(os.environ["SLOT_REHEARSAL_RECORDED"]).glob("*.json")):
        return
    fired, until = Path(os.environ["SLOT_REHEARSAL_FIRED"]), time.monotonic() + HOLD_S
    while not fired.exists() and time.monotonic() < until:
        time.sleep(0.2)


def device_main(argv: list[str]) -> int:
    """Inside the device's clone: the command, its runs slowed by :func:`hold` once one is recorded (``slow``: 1),
    the time limit marking the moment it fires for them."""
    slow = argv[1] == "1"
    args = argv[argv.index("--") + 1 :]
    from lmcompanion import campaign, cli
    from lmcompanion.campaign import runner

    fired = Path(os.environ["SLOT_REHEARSAL_FIRED"])

    class Deadline(runner._Deadline):  # the command's own time limit, seen by the lanes' hold
        def _fire(self):
            fired.touch()
            super()._fire()

    runner._Deadline = Deadline
    if slow:
        campaign.run = functools.partial(campaign.run, callbacks=(hold,))
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
        base.update(
            OMP_NUM_THREADS=os.environ.get("OMP_NUM_THREADS", "1"), LMC_PROGRESS="0", PYTHONUNBUFFERED="1", **GIT_ID
        )
        here = tmp / "here"
        _run(["git", "clone", "-q", str(REPO), str(here)], tmp, base, "a fresh clone of the last commit")
        env_here = {
            **base,
            "PYTHONPATH": str(here / "src"),
            "LMC_RUNS_DIR": str(tmp / "runs-here"),
            "LMC_CACHE_DIR": str(tmp / "cache-here"),
        }
        data = Path(os.environ.get("LMC_DATA_DIR") or REPO.parent / "shared" / "data")
        if data.is_dir():  # the pack is made where the offline corpora are (README); the device has only the pack
            env_here["LMC_DATA_DIR"] = str(data.resolve())
        py = [sys.executable, "-m", "lmcompanion", "campaign", "--profile", "smoke", "--seeds", "1"]
        _run(py + ["--pack", "_pack", "--wheels", str(_wheels(tmp))], here, env_here, "the pack, made here")
        command = [
            "campaign",
            "--profile",
            "smoke",
            "--device",
            "cpu",
            "--seeds",
            "1",
            "--from-pack",
            "_pack",
            "--budget-min",
            BUDGET,
            "--max-minutes",
            str(MAX_MINUTES),
            "--lanes",
            LANES,
        ]
        texts, took = [], []
        for slot in (1, 2):
            device, out = tmp / f"device{slot}", tmp / f"OUT{slot}"
            out.mkdir()
            _run(["git", "clone", "-q", str(here), str(device)], tmp, base, f"slot {slot}: the device's tree")
            shutil.copytree(here / "_pack", device / "_pack")  # the carried folder
            env_dev = {
                **base,
                "PYTHONPATH": str(device / "src"),
                "LMC_RUNS_DIR": str(device / "fresh-runs"),
                "LMC_CACHE_DIR": str(device / "fresh-cache"),
                "HF_HUB_OFFLINE": "1",
                "HF_DATASETS_OFFLINE": "1",
                "TORCHINDUCTOR_CACHE_DIR": str(device / "fresh-inductor"),
                "SLOT_REHEARSAL_RECORDED": str(device / "book" / "recorded" / "smoke"),
                "SLOT_REHEARSAL_FIRED": str(tmp / f"fired{slot}"),
            }
            t0 = time.monotonic()
            code, text = _run(
                [
                    sys.executable,
                    "tests/slot_rehearsal.py",
                    "device",
                    str(int(slot == 1)),
                    "--",
                    *command,
                    "--archive",
                    str(out / "slot.tgz"),
                ],
                device,
                env_dev,
                f"slot {slot} on the device",
                ok=(0, 75),
            )
            took.append(time.monotonic() - t0)
            (out / "campaign.log").write_text(text)
            texts.append(text)
            check(len(list(out.iterdir())) <= 8, f"slot {slot} brings back more than 8 files")
            started = re.findall(r"^\[\d+/\d+\] run (\S+)", text, re.M)
            recorded_now = re.findall(r"^    recorded \S+/smoke/(\S+)\.json: ", text, re.M)
            if slot == 1:
                cut = re.findall(r"^    interrupted during (\S+)", text, re.M)
                check(
                    code == 75 and len(cut) == 2 and set(cut) <= set(started),
                    f"slot 1 was not stopped by its limit with both lanes busy (exit {code}, interrupted: {cut})"
                    f":\n{text[-3000:]}",
                )
                finished = [r for r in started if r not in cut]
                check(
                    finished and len(recorded_now) == len(finished),
                    f"slot 1 recorded no run before the cut, or not every run it finished: {recorded_now}",
                )
                check(
                    re.search(r"lanes: 2 side by side: [\d,]+ tokens/s in all", text),
                    "slot 1 did not measure its lanes",
                )
            else:
                check(
                    started and set(started[:2]) == set(cut),
                    f"slot 2's first runs are not the runs cut off ({cut}): {started[:3]}",
                )
                check(not set(started) & set(finished), "slot 2 ran again what slot 1 had finished")
                check(len(recorded_now) >= 2, f"slot 2 did not finish the runs cut off: {recorded_now}")
            _, restored = _run(
                [sys.executable, "-m", "lmcompanion", "campaign", "--restore", str(out / "slot.tgz"), "--commit"],
                here,
                env_here,
                f"slot {slot}: restored and committed here",
            )
            head = subprocess.run(
                ["git", "-C", str(here), "log", "-1", "--format=%s"], capture_output=True, text=True
            ).stdout
            check(
                head.startswith(f"Recorded GPU campaign, slot {slot} on cpu (smoke profile)"),
                f"the commit of slot {slot} does not name it and its device: {head!r}",
            )
            status = subprocess.run(
                ["git", "-C", str(here), "status", "--porcelain"], capture_output=True, text=True
            ).stdout
            check(status.strip() == "", f"slot {slot} left files uncommitted:\n{status}")
        recorded = here / "book" / "recorded"
        sys.path.insert(0, str(here / "src"))
        from lmcompanion import campaign

        by_id = {s.name: s for s in campaign.steps("smoke", device="cpu", seeds=1)}
        for name in [*cut, *finished]:
            check(campaign.is_recorded(recorded, by_id[name].run), f"{name} is not recorded in {recorded}")
        progress = json.loads((recorded / "campaign" / "smoke" / "progress.json").read_text())
        check([c["slot"] for c in progress["commands"]] == [1, 2], f"progress names slots {progress['commands']}")
        for name in cut:
            check(
                progress["steps"][name]["attempts"] == 2 and progress["steps"][name]["status"] == "done",
                f"the cut run {name}: {progress['steps'][name]}",
            )
        report = json.loads((recorded / "campaign" / "smoke" / "check.json").read_text())
        failed = {k: v.get("error") for k, v in report["items"].items() if not v.get("ok")}
        check(
            report["ok"]
            and not failed
            and set(report["items"]) == {"autocast_and_fused_adamw", "compile_against_eager", "sdpa", "torchrun_gloo"},
            f"the two slots' check (merged) failed: {failed}",
        )
        compiled = report["items"]["compile_against_eager"]["families"]
        check(
            all(v["graphs_compiled"] >= 1 and v["recompiled_for_another_seed"] == 0 for v in compiled.values()),
            f"a second model of a compiled shape was compiled again: {compiled}",
        )
        lanes = json.loads((recorded / "campaign" / "smoke" / "lanes.json").read_text())["devices"]["cpu"]
        check(set(lanes["speedup"]) == {"1", "2"}, f"the lanes were not measured at 1 and 2 lanes: {lanes}")
        for name in [*cut, *finished]:
            summary = json.loads(campaign.reports.recorded_path(recorded, by_id[name].run).read_text())["summary"]
            check(
                {"compile_s", "graphs_compiled", "lanes_busy", "tokens_per_s"} <= set(summary),
                f"the recorded {name} lacks its lane's figures: {sorted(summary)}",
            )
        commands = progress["commands"]
        check(
            all(c.get("lanes") == 2 and c.get("lane_groups") for c in commands),
            f"a slot's progress lacks its lanes' figures: {commands}",
        )
        minutes = json.loads((recorded / "campaign" / "smoke" / "minutes.json").read_text())["measured"]
        check(
            sum(1 for k in minutes if k.startswith("run/")) >= len(finished) + 1 and "check/base" in minutes,
            f"minutes.json lacks the measured runs or the check: {sorted(minutes)}",
        )
        # the next plan with a second seed per arm: the runs whose first seed the slots measured are estimated by it
        _, plan = _run(
            py[:-1] + ["2", "--device", "cpu", "--plan", "--budget-min", BUDGET],
            here,
            env_here,
            "the next plan, here (two seeds per arm)",
        )
        m = re.search(r"estimates: (\d+) measured by earlier slots", plan)
        check(
            m
            and int(m.group(1)) >= len(finished) + 2
            and re.search(rf"{re.escape(cut[0].split('-s')[0])}-s1@\S+ .* min  measured ", plan),
            f"the next plan does not read the measured minutes:\n{plan[:3000]}",
        )
        check(
            re.search(r"^lanes: \d+ lane\(s\), [\d.]+x the throughput of one \(measured on ", plan, re.M),
            f"the next plan does not read the measured lane speed:\n{plan[:3000]}",
        )
        print(
            f"slot rehearsal passed in {time.monotonic() - t_start:.0f} s (slot 1 {took[0]:.0f} s, slot 2 "
            f"{took[1]:.0f} s): slot 1 measured its lanes ({lanes['speedup']}), recorded {len(finished)} run(s) "
            f"from two lanes and was cut off with both busy ({', '.join(cut)}), restored and committed; slot 2 "
            f"began with them; the check covers {', '.join(report['families'])}; the next plan has {m.group(1)} "
            "measured estimate(s)"
        )
        print(plan.split("\n\n")[0])
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "device":
        sys.exit(device_main(sys.argv[1:]))
    sys.exit(main())
