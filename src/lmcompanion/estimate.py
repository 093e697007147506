"""What a run would take on one H100, estimated from its counted FLOPs: stated assumptions, not a measurement.

The chapters say what re-running them at the ``gpu`` or ``paper`` profile costs before any run at that profile has
been recorded; once a recorded run is imported, the cost tables show its measured time instead. One estimate for
the whole book:

- training: each optimizer step's counted FLOPs (:meth:`RunConfig.flops_per_step`) at a share of the H100's dense
  bf16 peak that grows with the size of one micro-batch (:data:`MFU_BY_PASS`: small kernels are bound by launches
  and Python, large ones by the tensor cores; a step of ``grad_accum`` micro-batches runs ``grad_accum`` forward and
  backward passes of that size, not one large one), plus :data:`STEP_OVERHEAD_S` per step (optimizer, data,
  launches);
- evaluation: the forward FLOPs of every evaluation batch (both splits, ``eval_batches`` each, at every
  ``eval_interval``) at the same shares, plus a third of the step overhead per batch;
- :data:`RUN_OVERHEAD_S` per run (model, optimizer, checkpoints, the first steps).
"""

from __future__ import annotations


from . import models
from .run import RunConfig

# Dense bf16 tensor-core peaks from the vendors' data sheets (FLOP/s, SXM parts), for MFU and the estimate; the
# book's one table of them.
PEAK_BF16 = {"H100": 989e12, "H200": 989e12, "A100": 312e12, "L40S": 362e12, "A10G": 70e12, "L4": 121e12}
H100_BF16 = PEAK_BF16["H100"]
MFU_BY_PASS = ((1e13, 0.30), (1e12, 0.15), (1e11, 0.05), (0.0, 0.02))  # (FLOPs per pass at least, assumed MFU)
STEP_OVERHEAD_S = 0.010
RUN_OVERHEAD_S = 5.0


def peak_flops(device_name: str) -> float | None:
    """The dense bf16 peak of a GPU named ``device_name`` (e.g. "NVIDIA H100 80GB HBM3"); None when unknown."""
    return next((v for k, v in PEAK_BF16.items() if k in device_name), None)


def mfu(pass_flops: float) -> float:
    """The assumed model FLOPs utilisation of one forward (and backward) pass of ``pass_flops`` counted FLOPs."""
    return next(m for bound, m in MFU_BY_PASS if pass_flops >= bound)


def seconds(cfg: RunConfig) -> float:
    """Estimated seconds of one run of ``cfg`` on one H100 (see the module doc)."""
    tc = cfg.train
    step = cfg.flops_per_step()
    micro = step / tc.grad_accum  # one micro-batch's forward and backward: the unit of work the GPU sees
    evals = tc.max_steps // tc.eval_interval + (tc.max_steps % tc.eval_interval > 0)
    eval_batch = (
        models.flops_per_token(cfg.model, training=False)
        * (tc.eval_batch_size or tc.batch_size)
        * cfg.data.tokens_per_sequence(cfg.model)
    )
    n_eval_batches = evals * 2 * tc.eval_batches
    return (
        tc.max_steps * (step / (H100_BF16 * mfu(micro)) + STEP_OVERHEAD_S)
        + n_eval_batches * (eval_batch / (H100_BF16 * mfu(eval_batch)) + STEP_OVERHEAD_S / 3)
        + RUN_OVERHEAD_S
    )


__all__ = ["H100_BF16", "PEAK_BF16", "peak_flops", "MFU_BY_PASS", "RUN_OVERHEAD_S", "STEP_OVERHEAD_S", "mfu", "seconds"]
