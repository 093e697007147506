"""The CUDA-path check of a GPU slot (``python -m lmcompanion campaign``), restricted to the model families the slot
trains, recorded as a file (``DIR/campaign/<profile>/check.json``), each slot's check merged into it:

- bf16 autocast in the trainer's forward and fused AdamW (:func:`check_autocast`, one experiment per family);
- ``torch.compile`` losses against eager ones within a stated tolerance (:func:`check_compile`, each compiled family
  of the slot; the slot's first family where it compiles none), and no graph compiled again for a second model of
  the same shape (a lane's next run of an arm: :func:`compile_against_eager` counts the recompilations);
- which SDPA kernels run each distinct attention call of the slot's models (:func:`check_sdpa`);
- once per device, a one-process nccl run through torchrun (:func:`check_ddp`).

On a CPU (the rehearsal) the same items with their CPU counterparts. An item that fails is recorded with its message
and the others still run. :func:`one_step` is the CPU rehearsal of the same path for every model family
(``make gpu-rehearsal``).
"""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
import math
import os
import sys
import tempfile
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable, Sequence

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode

from .. import data as data_mod
from .. import contents, env, estimate, experiments, models, paths, signals
from ..experiments import pool
from ..run import RunConfig
from ..train import RunStore, trainer

FORMAT = "lmcompanion-campaign-check/1"
# Estimates of a check (stated, not measured, until a slot has run one: then lmcompanion.campaign.plan reads the
# measured seconds). CUDA initialisation, the autocast probes and the SDPA probes of the slot's models about 30 s; the
# torchrun subprocess (Python and torch imports, nccl, a smoke run), once per device, about 30 s; each compile-vs-eager
# comparison (a smoke-sized model, 6 steps each way, Dynamo and Inductor on the GPU machine's 16 cores) about 30 s.
CHECK_BASE_S, CHECK_TORCHRUN_S, CHECK_COMPILE_S = 30.0, 30.0, 30.0
# compile against eager: steps each way, and the tolerance on each step's training loss (relative). Under bf16
# autocast a matrix product rounds to 8 bits of mantissa (2^-9 = 2e-3 relative per rounding) and Inductor fuses and
# reorders the arithmetic, so compiled and eager losses differ by about that much and drift a little over steps;
# 2e-2 allows for it, while the graph errors the check looks for (a wrong mask, a dropped term, a stale buffer) move
# the loss by far more. In fp32 (the CPU's default) only the order of the sums differs: 1e-4.
COMPILE_STEPS = 6
COMPILE_RTOL = {"bfloat16": 2e-2, "float16": 2e-2, "float32": 1e-4}
TORCHRUN = {"cuda": "torchrun_nccl", "cpu": "torchrun_gloo"}  # the item's name on each device


def _error(exc: BaseException) -> dict:
    return {
        "ok": False,
        "error": f"{type(exc).__name__}: {exc}".strip()[:2000],
        "traceback": "".join(traceback.format_exception(exc))[-4000:],
    }


def _dtype_name(dtype) -> str | None:
    return None if dtype is None else str(dtype).replace("torch.", "")


def environment(device: str) -> dict:
    """Versions and the device, for the check's record."""
    info = {k: v for k, v in env.environment(device).items() if k not in ("time",)}
    try:
        info["triton"] = importlib.metadata.version("triton")
    except importlib.metadata.PackageNotFoundError:
        info["triton"] = None
    if device == "cuda":
        p = torch.cuda.get_device_properties(0)
        peak = estimate.peak_flops(torch.cuda.get_device_name(0))
        info.update(
            capability=[p.major, p.minor],
            multiprocessors=p.multi_processor_count,
            gpu_memory_gib=round(p.total_memory / 2**30, 1),
            cudnn=torch.backends.cudnn.version(),
            nccl=_nccl_version(),
            bf16_supported=torch.cuda.is_bf16_supported(),
            dense_bf16_peak_tflops=peak / 1e12 if peak else None,
        )
    return info


def _nccl_version() -> str:
    v = torch.cuda.nccl.version()
    return ".".join(map(str, v)) if isinstance(v, tuple) else str(v)


def _without_dropout(cfg: RunConfig) -> RunConfig:
    """``cfg`` with every dropout rate of its model at 0: eager and compiled code draw different dropout masks, so
    their losses agree only without dropout."""
    model = cfg.model
    zero = {
        f.name: 0.0
        for f in dataclasses.fields(model)
        if "dropout" in f.name and isinstance(getattr(model, f.name), float) and getattr(model, f.name) > 0
    }
    return cfg.replace(model=dataclasses.replace(model, **zero)) if zero else cfg


def _first_batch(s: trainer.Session) -> dict:
    return {k: v.to(s.device) for k, v in s.source.train_batches(0)[0].items()}


def _probe_autocast(cfg: RunConfig) -> dict:
    """One forward under the trainer's own set-up and autocast: the dtype of every Linear output, of the logits and of
    the loss, and the optimizer the trainer made."""
    with trainer.memory_guard(cfg, "the autocast probe"):
        s = trainer.setup(cfg, source=data_mod.kinds.check_source(cfg))
    seen: set[str] = set()
    hooks = [
        m.register_forward_hook(lambda _m, _i, o: seen.add(_dtype_name(o.dtype)))
        for m in s.model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    try:
        with torch.no_grad(), s.autocast():  # the plain module: a compiled one would compile again, for nothing
            out = s.model(**_first_batch(s))
    finally:
        for h in hooks:
            h.remove()
    expected = _dtype_name(trainer.autocast_dtype(cfg.train, cfg.device))
    return {
        "experiment": cfg.name,
        "train.dtype": cfg.train.dtype,
        "autocast": expected,
        "linear_outputs": sorted(seen),
        "logits": _dtype_name(out.logits.dtype),
        "loss": _dtype_name(out.loss.dtype) if out.loss is not None else None,
        "fused_adamw": bool(s.optimizer.defaults.get("fused")),
        "tf32_matmul": torch.backends.cuda.matmul.allow_tf32 if cfg.device == "cuda" else None,
        "ok": seen == {expected or "float32"},
    }


def check_autocast(run_cfgs: Sequence[RunConfig], device: str) -> dict:
    """bf16 autocast and fused AdamW as the trainer sets them up, one planned experiment per model family (the runs of
    the shared trainer on their own data); on a CPU, where the trainer runs fp32, a forced bf16 probe as well."""
    by_family: dict[str, RunConfig] = {}
    for cfg in run_cfgs:
        by_family.setdefault(cfg.model.family, cfg)
    probes = {}
    for family, cfg in by_family.items():
        try:
            probes[family] = _probe_autocast(cfg)
        except Exception as exc:  # noqa: BLE001  (recorded with its message)
            probes[family] = {"experiment": cfg.name, **_error(exc)}
    fused = {f: p["fused_adamw"] for f, p in probes.items() if "fused_adamw" in p}
    out = {
        "families": probes,
        "autocast_by_experiment": {c.name: _dtype_name(trainer.autocast_dtype(c.train, device)) for c in run_cfgs},
        "fused_adamw_in_use": fused,
        "fused_adamw_expected": device == "cuda",  # the trainer fuses on CUDA only
        "fused_adamw_as_expected": bool(fused) and all(v == (device == "cuda") for v in fused.values()),
    }
    if device == "cpu":  # the trainer's CPU default is fp32: rehearse the bf16 path too
        first = next(iter(by_family.values()))
        try:
            out["forced_bf16_on_cpu"] = _probe_autocast(first.replace(train=first.train.replace(dtype="bf16")))
        except Exception as exc:  # noqa: BLE001
            out["forced_bf16_on_cpu"] = _error(exc)
    out["ok"] = (
        all(p.get("ok") for p in probes.values())
        and out["fused_adamw_as_expected"]
        and out.get("forced_bf16_on_cpu", {"ok": True}).get("ok", False)
    )
    return out


def _losses(cfg: RunConfig, n: int) -> tuple[list[float], list[float]]:
    """The objective of ``n`` training steps of ``cfg`` from its initial weights, and each step's seconds."""
    s = trainer.setup(cfg, source=data_mod.kinds.check_source(cfg))
    losses, seconds = [], []
    for step in range(n):
        t0 = time.perf_counter()
        logged, _, _ = trainer.forward_backward(s, s.source.train_batches(step))
        trainer.update(s, cfg.train.lr)
        if cfg.device == "cuda":
            torch.cuda.synchronize()
        seconds.append(time.perf_counter() - t0)
        losses.append(logged[0])
    return losses, seconds


def compile_against_eager(cfg: RunConfig, n: int = COMPILE_STEPS) -> dict:
    """The same initial weights and batches, ``n`` steps eager and ``n`` steps under ``torch.compile``, dropout off
    (:func:`_without_dropout`): each step's loss compared within :data:`COMPILE_RTOL` of the autocast dtype. Then a
    second compiled run of the same shape with another seed (a new model, as a lane's next run of the arm) takes two
    steps: Dynamo must compile no graph for it (the graphs of a shape are made once per lane: the recompilations are
    counted, :func:`lmcompanion.experiments.pool.compile_counts`)."""
    cfg = _without_dropout(cfg.replace(train=cfg.train.replace(deterministic=False, compile=False)))
    eager, t_eager = _losses(cfg, n)
    graphs0, _ = pool.compile_counts()
    compiled_cfg = cfg.replace(train=cfg.train.replace(compile=True))
    compiled, t_compiled = _losses(compiled_cfg, n)
    graphs1, _ = pool.compile_counts()
    _losses(compiled_cfg.replace(seed=cfg.seed + 1), 2)
    recompiled = pool.compile_counts()[0] - graphs1
    dtype = _dtype_name(trainer.autocast_dtype(cfg.train, cfg.device)) or "float32"
    rtol = COMPILE_RTOL[dtype]
    rel = [abs(c - e) / max(abs(e), 1e-12) for c, e in zip(compiled, eager)]
    return {
        "experiment": cfg.name,
        "dtype": dtype,
        "steps": n,
        "eager": eager,
        "compiled": compiled,
        "max_relative_difference": max(rel),
        "rtol": rtol,
        "ok": max(rel) <= rtol and recompiled == 0,
        "graphs_compiled": graphs1 - graphs0,
        "recompiled_for_another_seed": recompiled,
        "first_compiled_step_s": round(t_compiled[0], 2),
        "compiled_s_per_step": round(sum(t_compiled[1:]) / max(1, n - 1), 4),
        "eager_s_per_step": round(sum(t_eager[1:]) / max(1, n - 1), 4),
    }


def check_compile(families: Sequence[str], run_cfgs: Sequence[RunConfig], profile: str, device: str) -> dict:
    """Compiled against eager losses for each family (a smoke-sized model of the family's first planned experiment,
    with that experiment's autocast dtype at ``profile``: the graph and its dtypes, seconds to compile)."""
    out = {}
    for family in families:
        cfg = next(c for c in run_cfgs if c.model.family == family)
        small = experiments.config(cfg.name, "smoke", device=device)
        small = small.replace(train=small.train.replace(dtype=cfg.train.dtype))
        try:
            out[family] = compile_against_eager(small)
        except Exception as exc:  # noqa: BLE001
            out[family] = {"experiment": cfg.name, **_error(exc)}
    return {"families": out, "ok": bool(out) and all(v.get("ok") for v in out.values())}


class _SDPACalls(TorchFunctionMode):
    """Records the arguments of every ``F.scaled_dot_product_attention`` call."""

    def __init__(self):
        super().__init__()
        self.calls: list[dict] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func is torch.nn.functional.scaled_dot_product_attention:
            q, k = args[0], args[1]
            mask = kwargs.get("attn_mask", args[3] if len(args) > 3 else None)
            self.calls.append(
                {
                    "q": list(q.shape[1:]),
                    "k": list(k.shape[1:]),
                    "mask": None if mask is None else {"shape": list(mask.shape), "dtype": _dtype_name(mask.dtype)},
                    "is_causal": bool(kwargs.get("is_causal", False)),
                }
            )
        return func(*args, **kwargs)


def sdpa_signatures(run_cfgs: Sequence[RunConfig]) -> list[dict]:
    """The distinct attention calls of the planned models (head size, lengths, mask), found by running each model once
    on the meta device; each with the experiments that make it and the micro-batch they run it at."""
    found: dict[str, dict] = {}
    for cfg in {c.model: c for c in run_cfgs}.values():
        model = models.build(cfg.model, device="meta")
        rec = _SDPACalls()
        batch = model.example_batch(1, device="meta")
        with rec, torch.no_grad():
            model.eval()
            model(**batch)
        for call in rec.calls:
            sig = {
                "q": call["q"],
                "k": call["k"],
                "head_size": call["q"][-1],
                "mask": call["mask"],
                "is_causal": call["is_causal"],
            }
            key = json.dumps(sig, sort_keys=True)
            entry = found.setdefault(key, {**sig, "experiments": [], "batch": cfg.train.batch_size})
            if cfg.name not in entry["experiments"]:
                entry["experiments"].append(cfg.name)
    return list(found.values())


class _ATenOps(TorchDispatchMode):
    """The names of the aten operators dispatched (the SDPA backend the dispatcher chose is one of them)."""

    def __init__(self):
        super().__init__()
        self.names: set[str] = set()

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.names.add(func.overloadpacket.__name__)
        return func(*args, **(kwargs or {}))


_SDPA_OPS = {
    "_scaled_dot_product_flash_attention_for_cpu": "flash (CPU)",
    "_scaled_dot_product_flash_attention": "flash",
    "_scaled_dot_product_efficient_attention": "efficient",
    "_scaled_dot_product_cudnn_attention": "cudnn",
    "_scaled_dot_product_attention_math": "math",
    "_scaled_dot_product_fused_attention_overrideable": "overrideable",
}


def _sdpa_inputs(sig: dict, device: str, dtype: torch.dtype, batch: int):
    g = torch.Generator(device=device).manual_seed(0)
    q = torch.randn((batch, *sig["q"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    k = torch.randn((batch, *sig["k"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    v = torch.randn((batch, *sig["k"]), generator=g, device=device, dtype=dtype, requires_grad=True)
    mask = None
    if sig["mask"] is not None:  # a mask of the call's kind (its pattern does not decide the kernel)
        lq, lk = sig["q"][-2], sig["k"][-2]
        allowed = torch.ones(lq, lk, dtype=torch.bool, device=device).tril(lk - lq)
        mask = (
            allowed
            if sig["mask"]["dtype"] == "bool"
            else torch.zeros(lq, lk, device=device, dtype=dtype).masked_fill(~allowed, float("-inf"))
        )
    return q, k, v, mask


def _sdpa_once(sig, device, dtype, batch):
    q, k, v, mask = _sdpa_inputs(sig, device, dtype, batch)
    y = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=sig["is_causal"])
    y.float().sum().backward()
    if device == "cuda":
        torch.cuda.synchronize()


def check_sdpa(run_cfgs: Sequence[RunConfig], device: str) -> dict:
    """For every distinct attention call of the planned models: which SDPA backends run it (forward and backward, each
    forced alone with ``sdpa_kernel``, with the reason of those that refuse), and which kernel the default dispatch
    runs (torch.profiler: the aten op, and on CUDA the kernels' names)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.profiler import ProfilerActivity, profile

    backends = [
        b for b in ("FLASH_ATTENTION", "EFFICIENT_ATTENTION", "CUDNN_ATTENTION", "MATH") if hasattr(SDPBackend, b)
    ]
    dtypes = {_dtype_name(trainer.autocast_dtype(c.train, device)) or "float32" for c in run_cfgs}
    sigs = sdpa_signatures(run_cfgs)
    results = []
    for sig in sigs:
        for dtype_name in sorted(dtypes):
            dtype = getattr(torch, dtype_name)
            batch = min(sig["batch"], 64)
            row = {**sig, "dtype": dtype_name, "batch": batch, "backends": {}}
            for name in backends:
                with warnings.catch_warnings(record=True) as caught:
                    warnings.simplefilter("always")
                    try:
                        with sdpa_kernel([getattr(SDPBackend, name)]):
                            _sdpa_once(sig, device, dtype, batch)
                        row["backends"][name] = "ok"
                    except Exception as exc:  # noqa: BLE001  (a backend that refuses the call: recorded with why)
                        reasons = "; ".join(str(w.message).split("\n")[0] for w in caught)[:600]
                        row["backends"][name] = f"refused: {str(exc).splitlines()[0][:200]}" + (
                            f" ({reasons})" if reasons else ""
                        )
            try:
                ops = _ATenOps()
                with ops:
                    _sdpa_once(sig, device, dtype, batch)
                row["default"] = sorted({v for k, v in _SDPA_OPS.items() if k in ops.names}) or ["(none found)"]
                if device == "cuda":  # the kernels the default dispatch launches, by name
                    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
                        _sdpa_once(sig, device, dtype, batch)
                    kernels = sorted(
                        {
                            e.name
                            for e in prof.events()
                            if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA
                            and any(
                                w in e.name.lower()
                                for w in ("flash", "fmha", "attention", "cudnn", "attn", "softmax", "gemm")
                            )
                        }
                    )
                    row["default_kernels"] = [k[:160] for k in kernels[:12]]
                row["ok"] = True
            except Exception as exc:  # noqa: BLE001
                row.update(_error(exc))
            results.append(row)
    if not sigs:  # nothing to check (the matchers attend to nothing): said, not failed
        return {
            "calls": [],
            "ok": True,
            "note": "no attention call in these models: " + ", ".join(sorted({c.name for c in run_cfgs})),
        }
    return {"calls": results, "ok": _calls_ok(results)}


def _calls_ok(calls: list) -> bool:
    return all(isinstance(c, dict) and c.get("ok") for c in calls)


def check_ddp(device: str, name: str, timeout: float = 300.0) -> dict:
    """``torchrun --standalone --nproc_per_node 1``: nccl (gloo on a CPU) initialised, an all-reduce, a DDP-wrapped
    step of ``name``'s smoke model, then its smoke run through the trainer as ``train`` runs it under torchrun. One
    process is plain training for the trainer (``train.distributed`` initialises no process group for a world of 1),
    so the backend is exercised by the probe itself."""
    with tempfile.TemporaryDirectory(prefix=f"lmc-ddp-{os.getpid()}-") as tmp:
        result_path = Path(tmp) / "probe.json"
        cmd = [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "1",
            "-m",
            "lmcompanion.campaign.check",
            "ddp-probe",
            "--device",
            device,
            "--name",
            name,
            "--out",
            str(result_path),
        ]
        envs = {**os.environ, "LMC_RUNS_DIR": str(Path(tmp) / "runs"), "LMC_PROGRESS": "0"}
        t0 = time.monotonic()
        proc = signals.run_group(cmd, timeout=timeout, env=envs)  # torchrun and its workers stop with us
        out = {"command": " ".join(cmd[:-2]), "returncode": proc.returncode, "seconds": round(time.monotonic() - t0, 1)}
        probe = _probe_result(result_path)
        if probe is not None:
            out.update(probe)
        if proc.returncode != 0 or probe is None:
            out["output_tail"] = (proc.stdout + proc.stderr)[-3000:]
        out["ok"] = proc.returncode == 0 and bool(probe) and bool(probe.get("ok"))
    return out


def _probe_result(path: Path) -> dict | None:
    """The probe's JSON object (written by a child process of this command), or None when it wrote none."""
    try:
        value = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def ddp_probe(device: str, name: str, out: Path) -> None:
    """Run under torchrun by :func:`check_ddp` (``python -m lmcompanion.campaign.check ddp-probe``)."""
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP

    backend = "nccl" if device == "cuda" else "gloo"
    local = int(os.environ.get("LOCAL_RANK", "0"))
    result = {"backend": backend, "world_size": int(os.environ.get("WORLD_SIZE", "0")), "ok": False}
    try:
        if device == "cuda":
            torch.cuda.set_device(local)
        dev = torch.device(f"cuda:{local}" if device == "cuda" else "cpu")
        dist.init_process_group(backend=backend)
        result["initialised_backend"] = str(dist.get_backend())
        t = torch.ones(1, device=dev)
        dist.all_reduce(t)
        result["all_reduce"] = t.item()
        if backend == "nccl":
            result["nccl"] = _nccl_version()
        cfg = experiments.config(name, "smoke", device=device)
        model = models.build(cfg.model).to(dev)
        ddp = DDP(model, device_ids=[local] if device == "cuda" else None)
        batch = {k: v.to(dev) for k, v in data_mod.build_source(cfg).train_batches(0)[0].items()}
        loss = ddp(**batch).loss
        loss.backward()
        result["ddp_step_loss"] = loss.item()
        dist.barrier()
        dist.destroy_process_group()
        run = experiments.planned(name, "smoke", 0, device=device).train(RunStore(), progress=False)
        result["train"] = {
            "experiment": name,
            "profile": "smoke",
            "final": run.summary["final"],
            "train_time_s": run.summary["train_time_s"],
        }
        result["ok"] = result["all_reduce"] == result["world_size"]
    except Exception as exc:  # noqa: BLE001
        result.update(_error(exc))
    paths.atomic_write(out, json.dumps(result, indent=1, default=str))


def check(
    run_cfgs: Sequence[RunConfig],
    families: Sequence[str],
    profile: str,
    device: str,
    *,
    torchrun: str | None = None,
    log: Callable = print,
) -> dict:
    """Every item of the check (see the module doc) for the runs ``run_cfgs`` of one slot: autocast and SDPA for
    their models, compile-vs-eager for ``families``, and the torchrun probe with the experiment ``torchrun`` (one the
    shared trainer trains on its own data; None: no probe); an item that fails is recorded with its message and the
    others still run."""
    try:
        about = environment(device)
    except Exception as exc:  # noqa: BLE001
        about = _error(exc)
    report = {
        "format": FORMAT,
        "profile": profile,
        "device": device,
        "environment": about,
        "tolerances": {"compile_rtol": COMPILE_RTOL, "compile_steps": COMPILE_STEPS},
        "items": {},
    }
    items = {
        "autocast_and_fused_adamw": lambda: check_autocast(run_cfgs, device),
        "compile_against_eager": lambda: check_compile(families, run_cfgs, profile, device),
        "sdpa": lambda: check_sdpa(run_cfgs, device),
    }
    if torchrun:
        items[TORCHRUN[device]] = lambda: check_ddp(device, torchrun)
    for key, fn in items.items():
        t0 = time.monotonic()
        try:
            with signals.unswallowed():  # a signal a library turned into its own error still stops the campaign
                result = fn()
        except Exception as exc:  # noqa: BLE001  (a check never fails the campaign silently: it is recorded)
            result = _error(exc)
        result["seconds"] = round(time.monotonic() - t0, 1)
        report["items"][key] = result
        log(
            f"    check {key}: {'ok' if result.get('ok') else 'FAILED'} ({result['seconds']:.0f} s)"
            + (f": {result['error']}" if "error" in result else "")
        )
    report["families"] = sorted({c.model.family for c in run_cfgs})
    report["compiled"] = list(families)
    report["ok"] = all(v.get("ok") for v in report["items"].values())
    report["complete"] = True
    return report


def checked(report: dict | None, device: str) -> tuple[set[str], bool]:
    """(the model families a check report covers, whether its torchrun item ran) on ``device``; nothing for a
    report of another device or one that was cut off."""
    if not report or report.get("device") != device or not report.get("complete"):
        return set(), False
    families = report.get("families")
    return (set(families) if isinstance(families, list) else set()), TORCHRUN.get(device, "") in report.get("items", {})


def merge(old: dict | None, new: dict) -> dict:
    """``new`` (one slot's check) merged into ``old`` (the checks of earlier slots on the same device): per family
    results and attention calls added, the torchrun item kept from the slot that ran it, each item ok only while every
    slot's was."""
    if not old or old.get("device") != new.get("device") or not old.get("complete"):
        return new
    out = {**old, "environment": new["environment"], "items": dict(old.get("items", {}))}
    for key, item in new["items"].items():
        before = out["items"].get(key)
        if not isinstance(before, dict):
            out["items"][key] = item
            continue
        merged = {**before, **{k: v for k, v in item.items() if k not in ("families", "calls")}}
        if isinstance(before.get("families"), dict) and isinstance(item.get("families"), dict):
            merged["families"] = {**before["families"], **item["families"]}
        if isinstance(before.get("calls"), list) and isinstance(item.get("calls"), list):
            merged["calls"] = before["calls"] + [c for c in item["calls"] if c not in before["calls"]]
        merged["ok"] = bool(before.get("ok")) and bool(item.get("ok"))
        if isinstance(merged.get("calls"), list) and "error" not in merged:
            # an item made of calls is ok while each of its calls is: a slot whose models made none adds nothing
            # (before that was said, such a slot recorded the item failed, with no call and no error)
            merged["ok"] = _calls_ok(merged["calls"])
            merged.pop("note", None)
        merged["seconds"] = round(float(before.get("seconds", 0)) + float(item.get("seconds", 0)), 1)
        out["items"][key] = merged
    out["families"] = sorted(set(old.get("families") or []) | set(new["families"]))
    out["compiled"] = sorted(set(old.get("compiled") or []) | set(new["compiled"]))
    out["ok"] = all(v.get("ok") for v in out["items"].values())
    out["complete"] = True
    return out


# --- one training step of every model family under bf16 autocast and torch.compile on the CPU ------------------

# One experiment per model family, and per variant of a family whose code paths differ (Llama, GPT, the hybrids;
# attention and repeat upsampling; the matcher as a mixer and as a transformer). tests/gpu_rehearsal.py
# (`make gpu-rehearsal`) runs one step of each under bf16 autocast, eagerly and compiled, on the CPU.
FAMILY_CASES = contents.family_cases()  # as each chapter declares them (chapter.toml), in the book's order


def one_step(name: str, *, compile: bool, dtype: str = "bf16", profile: str = "smoke") -> dict:
    """One training step of experiment ``name`` (its smoke model and batches) on the CPU under ``dtype`` autocast,
    eager or compiled: the loss, the dtypes the Linear layers produced, and the seconds it took."""
    run = experiments.planned(name, profile, 0, device="cpu")
    cfg = run.config.replace(train=run.config.train.replace(dtype=dtype, compile=compile, deterministic=False))
    for need in run.needs:
        need.train(progress=False)
    source = run.procedure.source(cfg) if run.procedure.source is not None else None
    s = trainer.setup(cfg, source=source)
    seen: set[str] = set()
    hooks = [
        m.register_forward_hook(lambda _m, _i, o: seen.add(_dtype_name(o.dtype)))
        for m in s.model.modules()
        if isinstance(m, torch.nn.Linear)
    ]
    t0 = time.perf_counter()
    try:
        logged, _, _ = trainer.forward_backward(s, s.source.train_batches(0))
        trainer.update(s, cfg.train.lr)
    finally:
        for h in hooks:
            h.remove()
    return {
        "experiment": name,
        "family": cfg.model.family,
        "compile": compile,
        "dtype": dtype,
        "loss": logged[0],
        "linear_outputs": sorted(seen),
        "seconds": round(time.perf_counter() - t0, 2),
        "finite": all(math.isfinite(v) for v in logged),
    }


# --- torchrun's entry point for the probe ----------------------------------------------------------------------


def _main(argv: Sequence[str]) -> int:
    import argparse

    p = argparse.ArgumentParser(prog="python -m lmcompanion.campaign.check")
    p.add_argument("what", choices=["ddp-probe"])
    p.add_argument("--device", required=True)
    p.add_argument("--name", required=True)
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    ddp_probe(args.device, args.name, Path(args.out))
    return 0


__all__ = [
    "CHECK_BASE_S",
    "CHECK_COMPILE_S",
    "CHECK_TORCHRUN_S",
    "COMPILE_RTOL",
    "FAMILY_CASES",
    "check",
    "checked",
    "compile_against_eager",
    "merge",
    "one_step",
]

if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
