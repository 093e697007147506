"""Throughput and memory of one experiment's training step: ``python -m lmcompanion bench NAME --profile P``.

It times ``--steps`` optimizer steps of the experiment's real configuration (model, batch, dtype, compile) on
random token windows, after ``--warmup`` untimed steps, and prints tokens per second, the model FLOPs
utilisation (MFU: the 6N + 12LTC training FLOPs per token against the GPU's dense bf16 peak) and the peak
memory. It prints figures; nothing asserts a speed.
"""

from __future__ import annotations

import contextlib
import time

import torch

# Dense bf16 tensor-core peaks from the vendors' data sheets (FLOP/s), for MFU; unknown devices print no MFU.
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 70e12, "L4": 121e12}


def peak_flops(device_name: str) -> float | None:
    return next((v for k, v in PEAK_BF16.items() if k in device_name), None)


def bench(cfg, steps: int = 20, warmup: int = 5) -> dict:
    from . import models
    from .train.trainer import autocast_dtype, make_optimizer

    tc = cfg.train
    device = torch.device(cfg.device)
    if cfg.device == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True
        torch.cuda.reset_peak_memory_stats()
    torch.manual_seed(cfg.seed)
    model = models.build(cfg.model).to(device)
    optimizer = make_optimizer(model, tc, cfg.device)
    run_model = torch.compile(model) if tc.compile else model
    dtype = autocast_dtype(tc, cfg.device)
    amp = (lambda: torch.autocast(device_type=cfg.device, dtype=dtype)) if dtype else contextlib.nullcontext
    T, V = cfg.model.context_size, cfg.model.vocab_size
    g = torch.Generator().manual_seed(0)
    batch = torch.randint(0, V, (tc.batch_size, T + 1), generator=g).to(device)
    x, y = batch[:, :-1], batch[:, 1:]

    def step():
        for _ in range(tc.grad_accum):
            with amp():
                loss = run_model(x, y).loss
            (loss / tc.grad_accum).backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(warmup):
        step()
    if cfg.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    if cfg.device == "cuda":
        torch.cuda.synchronize()
    seconds = (time.perf_counter() - t0) / steps
    tokens = tc.batch_size * tc.grad_accum * T
    result = {"experiment": cfg.name, "device": cfg.device, "dtype": str(dtype or torch.float32).replace("torch.", ""),
              "compile": tc.compile, "params": model.num_params(), "tokens/step": tokens,
              "s/step": round(seconds, 4), "tokens/s": round(tokens / seconds)}
    if cfg.device == "cuda":
        name = torch.cuda.get_device_name()
        peak = peak_flops(name)
        result["gpu"] = name
        result["peak memory (GiB)"] = round(torch.cuda.max_memory_allocated() / 2**30, 2)
        if peak:
            result["MFU"] = round(model.flops_per_token() * tokens / seconds / peak, 3)
    return result
