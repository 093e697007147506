"""Training memory of a model of any family: counted without allocating, or measured on a GPU.

One method for every model family (the baseline, the AR encoder-decoder, DeepSight, the hourglass, the mixers and
transformers, ...), so that two families' numbers can be set side by side. It was the masked-mixer chapter's method
for the write-up's memory-versus-context tables and keeps those numbers exactly (``tests/test_memory.py``); the
mixer chapter's ``memory_counts`` and ``measure_memory_cuda`` call it.

:func:`training_memory` builds the model on the meta device (no memory, no time), runs one forward and backward pass
on a batch of zeros and counts, with a dispatch mode that sees every tensor created:

- ``parameters``, ``buffers``, ``gradients`` (of the parameters that get one) and ``optimizer_state`` (AdamW: two
  fp32 tensors per parameter);
- ``saved_for_backward``: the tensors autograd saves (``saved_tensors_hooks``), each storage once, parameters and
  buffers left out;
- ``peak_during_pass``: the most bytes of tensors created during forward and backward alive at once (activations,
  temporaries and the parameter gradients as they appear);
- ``one_pass`` = parameters + buffers + peak_during_pass, and ``training_step`` = one_pass + optimizer_state;
- ``masked_weight_copies``: the masked token-conv weights ``W * mask`` a mixer's forward creates and the convs save
  (already inside ``saved_for_backward`` and ``peak_during_pass``; 0 for other families). The original masks in
  place and saves no such copy, so its footprint is about ``one_pass - masked_weight_copies - buffers`` (its own
  forward allocates a temporary fp32 mask per block instead).

By default it counts an eager fp32 pass: no autocast, no ``torch.compile``, no fused attention (on the meta device
attention takes SDPA's math path and saves the T x T probabilities). ``autocast=torch.float16`` counts the same pass
under mixed precision as CUDA's autocast runs it (the masked-mixer write-up trained with the HF Trainer's
``fp16=True``): the parameters, their gradients and AdamW's moments stay fp32, the ops CUDA's autocast runs in fp16
(matrix products, convolutions, attention) read fp16 copies of their inputs (a parameter's copy made once per forward,
as autocast caches it), and the ops it runs in fp32 (softmax, normalisations, the loss, ...) read fp32 ones. The meta
device has no autocast of its own, so the policy is applied by a function mode (:class:`AutocastPolicy`) above
autograd, where autocast sits, and autograd saves exactly the copies it would save on a GPU. A GPU run with flash
attention holds less; :func:`measure_cuda` measures a pass there, and a run trained on CUDA records its own peak
(``summary["peak_mem_bytes"]``, :func:`recorded_peak`). Two families counted the same way compare like with like.
"""

from __future__ import annotations

import contextlib
import functools
import math

import torch
from torch.multiprocessing.reductions import StorageWeakRef
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from . import models
from .models.mixer import MaskedTokenConv


class _LiveBytes(TorchDispatchMode):
    """Follows every tensor storage created while active: bytes alive now, and the peak."""

    def __init__(self, exclude: set[int]):
        super().__init__()
        self.exclude, self.live, self.peak = exclude, {}, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self.live = {k: v for k, v in self.live.items() if not v[0].expired()}
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                storage = t.untyped_storage()
                if storage._cdata not in self.live and storage._cdata not in self.exclude:
                    self.live[storage._cdata] = (StorageWeakRef(storage), storage.nbytes())
        self.peak = max(self.peak, sum(n for _, n in self.live.values()))
        return out


# CUDA's autocast op lists (PyTorch's AMP reference, "CUDA Ops that can autocast to float16 / float32", as its own
# tests list them in torch.testing._internal.autocast_test_lists; scaled_dot_product_attention is on the lower-precision
# list of the C++ policy), by the name of the function or Tensor method that reaches them. Other ops run in the type of
# their inputs, with PyTorch's type promotion.
AUTOCAST_LOWER = frozenset(
    {
        "linear",
        "matmul",
        "__matmul__",
        "__rmatmul__",
        "mm",
        "bmm",
        "baddbmm",
        "addmm",
        "addbmm",
        "addmv",
        "addr",
        "mv",
        "einsum",
        "chain_matmul",
        "multi_dot",
        "linalg_vecdot",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_tbc",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "prelu",
        "scaled_dot_product_attention",
    }
)
AUTOCAST_FP32 = frozenset(
    {
        "acos",
        "asin",
        "cosh",
        "erfinv",
        "exp",
        "expm1",
        "log",
        "log10",
        "log2",
        "log1p",
        "reciprocal",
        "rsqrt",
        "sinh",
        "tan",
        "pow",
        "__pow__",
        "__rpow__",
        "softmax",
        "log_softmax",
        "softmin",
        "layer_norm",
        "rms_norm",
        "group_norm",
        "norm",
        "normalize",
        "cosine_similarity",
        "poisson_nll_loss",
        "cosine_embedding_loss",
        "hinge_embedding_loss",
        "kl_div",
        "margin_ranking_loss",
        "triplet_margin_loss",
        "binary_cross_entropy_with_logits",
        "cumprod",
        "cumsum",
        "dist",
        "pdist",
        "cdist",
        "prod",
        "renorm",
        "sum",
        "logsumexp",
        "softplus",
        "nll_loss",
        "cross_entropy",
        "l1_loss",
        "smooth_l1_loss",
        "huber_loss",
        "mse_loss",
        "multilabel_margin_loss",
        "soft_margin_loss",
        "multi_margin_loss",
    }
)


class AutocastPolicy(TorchFunctionMode):
    """CUDA's autocast policy, applied by name above autograd (on any device, the meta device included): the
    floating-point tensor arguments of an op of :data:`AUTOCAST_LOWER` are cast to ``dtype``, those of an op of
    :data:`AUTOCAST_FP32` to fp32; a leaf tensor that needs a gradient (a parameter) is cast once while the mode is
    active, as autocast caches it. Used by :func:`training_memory` to count a mixed-precision pass."""

    def __init__(self, dtype: torch.dtype = torch.float16):
        super().__init__()
        self.dtype, self.cache = dtype, {}

    def _cast(self, x, dtype: torch.dtype):
        if not (isinstance(x, torch.Tensor) and x.is_floating_point() and x.dtype != dtype):
            return x
        if x.is_leaf and x.requires_grad:
            key = (id(x), dtype)
            if key not in self.cache:
                self.cache[key] = (x, x.to(dtype))  # the tensor kept beside its copy: its id stays its own
            return self.cache[key][1]
        return x.to(dtype)

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        dtype = self.dtype if name in AUTOCAST_LOWER else torch.float32 if name in AUTOCAST_FP32 else None
        if dtype is not None:
            cast = lambda v: [self._cast(t, dtype) for t in v] if isinstance(v, (list, tuple)) else self._cast(v, dtype)
            args, kwargs = tuple(cast(a) for a in args), {k: cast(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)

    def __exit__(self, *exc):
        self.cache.clear()  # autocast drops its cached copies when its region ends
        return super().__exit__(*exc)


def training_memory(
    model_config,
    batch_size: int = 1,
    include_head: bool = False,
    dtype: torch.dtype = torch.float32,
    device: str = "meta",
    autocast: torch.dtype | None = None,
) -> dict[str, int]:
    """Bytes of one training pass of any model family (see the module doc for the keys), counted on ``device``
    (``"meta"``: without allocating; ``"cpu"`` runs the same count on real tensors, for tiny configs).

    ``autocast``: ``None`` counts the pass in ``dtype``; ``torch.float16`` (or ``torch.bfloat16``) counts it under
    mixed precision, the forward under CUDA's autocast policy (:class:`AutocastPolicy`), the model in fp32.

    ``include_head=True`` is a training step as the trainer runs it: the model's own example batch
    (``Model.example_batch``: ``batch_size`` sequences of its context) through ``model(**batch).loss``, auxiliary
    losses included. ``include_head=False`` is the masked-mixer write-up's "without a language modeling head": the
    blocks run on the embedding output and the sum of the last hidden state is backpropagated (for models with a
    ``hidden`` method: the mixers and transformers); the head's weights are still counted in ``parameters``.
    """
    return dict(_counted(model_config, batch_size, include_head, dtype, device, autocast))


@functools.lru_cache(maxsize=128)
def _counted(
    model_config,
    batch_size: int,
    include_head: bool,
    dtype: torch.dtype,
    device: str,
    autocast: torch.dtype | None = None,
):
    model = models.build(model_config, device=device).to(dtype).train()
    if not include_head and not hasattr(model, "hidden"):
        raise TypeError(
            f"include_head=False needs a model with a hidden() method; {type(model).__name__} has none: "
            "count a training step with include_head=True"
        )
    params = {p.untyped_storage()._cdata: p for p in model.parameters()}
    buffers = {b.untyped_storage()._cdata: b for b in model.buffers()}
    n_params = sum(p.numel() for p in params.values())
    saved: dict[int, int] = {}

    def pack(t: torch.Tensor) -> torch.Tensor:
        storage = t.untyped_storage()
        if storage._cdata not in params and storage._cdata not in buffers:
            saved[storage._cdata] = storage.nbytes()
        return t

    if include_head:
        batch = model.example_batch(batch_size, device=device)
    else:
        idx = torch.zeros(batch_size, model.context_size, dtype=torch.long, device=device)
    tracker = _LiveBytes(exclude=set(params) | set(buffers))
    policy = AutocastPolicy(autocast) if autocast is not None else contextlib.nullcontext()
    with tracker, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        with policy:  # the forward only, as ``with torch.autocast(...): loss = model(...)``
            out = model(**batch).loss if include_head else model.hidden(idx).sum()
        out.float().backward()
    memory = {
        "parameters": sum(p.untyped_storage().nbytes() for p in params.values()),
        "buffers": sum(b.untyped_storage().nbytes() for b in buffers.values()),
        "gradients": sum(p.grad.untyped_storage().nbytes() for p in params.values() if p.grad is not None),
        "optimizer_state": 2 * 4 * n_params,
        "saved_for_backward": sum(saved.values()),
        "peak_during_pass": tracker.peak,
        # one masked copy of each token-conv weight per forward, saved by the conv (part of the two above)
        "masked_weight_copies": sum(
            m.weight.untyped_storage().nbytes() for m in model.modules() if isinstance(m, MaskedTokenConv)
        ),
    }
    memory["one_pass"] = memory["parameters"] + memory["buffers"] + memory["peak_during_pass"]
    memory["training_step"] = memory["one_pass"] + memory["optimizer_state"]
    return tuple(memory.items())


def step_memory(run_config) -> dict[str, int]:
    """:func:`training_memory` of one micro-batch of a run as its trainer steps (``train.batch_size`` sequences,
    the loss and its auxiliary terms, AdamW's state), counted in fp32."""
    return training_memory(run_config.model, batch_size=run_config.train.batch_size, include_head=True)


def measure_cuda(model_config, batch_size: int = 1, include_head: bool = False) -> float:
    """Bytes of ``torch.cuda.max_memory_allocated`` over the same pass as :func:`training_memory`, in fp32 on this
    machine's GPU (NaN when it does not fit)."""
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = None
    try:
        model = models.build(model_config, device="cuda").train()
        if include_head:
            out = model(**model.example_batch(batch_size, device="cuda")).loss
        else:
            out = model.hidden(torch.zeros(batch_size, model.context_size, dtype=torch.long, device="cuda")).sum()
        out.backward()
        torch.cuda.synchronize()
        return float(torch.cuda.max_memory_allocated())
    except torch.cuda.OutOfMemoryError:
        return math.nan
    finally:
        del model
        torch.cuda.empty_cache()


def recorded_peak(runs) -> list[float]:
    """The peak memory each run recorded while training (``summary["peak_mem_bytes"]``: runs made on CUDA), in
    bytes; empty when none of them was made on a GPU."""
    return [float(r.summary["peak_mem_bytes"]) for r in runs if r.summary.get("peak_mem_bytes") is not None]


__all__ = [
    "AUTOCAST_FP32",
    "AUTOCAST_LOWER",
    "AutocastPolicy",
    "measure_cuda",
    "recorded_peak",
    "step_memory",
    "training_memory",
]
