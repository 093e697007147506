"""Configuration, the bottom layer: frozen dataclasses with validation, the four profiles, ``key=value`` overrides.

Every config checks the types of its fields when it is built (floats must be finite) and then runs its own
``validate`` rules, so an impossible setting stops before any data is loaded or any step is taken. A run is
described by :class:`lmcompanion.run.RunConfig`, which combines a model config (``lmcompanion.models``), a data
config (``lmcompanion.data``) and the :class:`TrainConfig` defined here.

Overrides address fields by dotted path (``train.lr=1e-3``, ``model.cross_attn_config.n_head=4``). All of them are
applied first and each config is validated once afterwards, so settings that only make sense together can be given
together, in any order; an unknown path is an error that lists the valid ones.
"""

from __future__ import annotations

import ast
import dataclasses
import math
import difflib
import hashlib
import json
import types
from dataclasses import dataclass, fields, is_dataclass
from typing import Any, Literal, Mapping, Union, get_args, get_origin, get_type_hints

from .errors import ConfigError

# The four profiles every chapter understands; what each one means for a given experiment is decided by
# that experiment (lmcompanion.experiments), always keeping the write-up's proportions.
PROFILES: dict[str, str] = {
    "smoke": "seconds on a CPU: generated corpus and tiny models, for CI and the nbval references",
    "cpu": "the book's default: a few minutes per chapter on a 2-core CPU, real corpora, small models",
    "gpu": "one GPU (H100 class): tens of minutes per chapter",
    "paper": "the write-up's own settings (model, data, steps): hours on one GPU",
}


def suggest(name: str, options) -> str:
    """' (did you mean X?)' when a close match exists, else ''."""
    close = difflib.get_close_matches(str(name), [str(o) for o in options], n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_profile(profile: str) -> str:
    if profile not in PROFILES:
        raise ConfigError(
            f"unknown profile {profile!r}{suggest(profile, PROFILES)}; valid profiles: {', '.join(PROFILES)}"
        )
    return profile


# --------------------------------------------------------------------------------------------------
# Type checking of dataclass fields


def _type_name(hint) -> str:
    if get_origin(hint) is Literal:
        return " | ".join(repr(a) for a in get_args(hint))
    if get_origin(hint) in (Union, types.UnionType):
        return " | ".join(_type_name(a) for a in get_args(hint))
    if hint is type(None):
        return "None"
    return getattr(hint, "__name__", str(hint))


def _matches(value, hint) -> bool:
    """Whether ``value`` is an instance of the annotation ``hint`` (the subset of typing we use)."""
    if hint is Any:
        return True
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(_matches(value, a) for a in get_args(hint))
    if origin is Literal:
        return any(value == a and type(value) is type(a) for a in get_args(hint))
    if origin is tuple:
        args = get_args(hint)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(_matches(v, args[0]) for v in value)
        return len(args) == len(value) and all(_matches(v, a) for v, a in zip(value, args))
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if isinstance(hint, type):
        return isinstance(value, hint)
    return True


class ConfigBase:
    """Mixin for frozen config dataclasses: type-check every field, then call :meth:`validate`.

    ints given for float fields are stored as floats, so that ``lr=1`` and ``lr=1.0`` hash the same.
    """

    def __post_init__(self) -> None:
        hints = get_type_hints(type(self))
        for f in fields(self):
            value, hint = getattr(self, f.name), hints[f.name]
            if not _matches(value, hint):
                raise ConfigError(f"{type(self).__name__}.{f.name} must be {_type_name(hint)}, got {value!r}")
            if hint is float or (get_origin(hint) in (Union, types.UnionType) and float in get_args(hint)):
                if isinstance(value, int) and not isinstance(value, bool):
                    object.__setattr__(self, f.name, float(value))
                elif isinstance(value, float) and not math.isfinite(value):
                    raise ConfigError(f"{type(self).__name__}.{f.name} must be a finite number, got {value!r}")
        self.validate()

    def validate(self) -> None:
        """Rules between fields; raise ConfigError naming the fix."""

    def replace(self, **changes):
        return dataclasses.replace(self, **changes)


def require(condition: bool, message: str) -> None:
    if not condition:
        raise ConfigError(message)


@dataclass(frozen=True)
class WriteUpPasses(ConfigBase):
    """The passes a write-up's runs made over their training data, as a data kind states them (its
    ``write_up_passes(run_cfg)``): a number, never text to read one back from. The book writes it in its own format
    (:func:`lmcompanion.chapters.scale.write_up_passes_text`): "≈ 3.12 (of 2,000,000 stories)", "1,536 (2.0 epochs
    of every stride-1 window)", or the words alone where there is no number ("unknown")."""

    passes: float | None  # None where the kind can state no number; else to the decimals the kind can vouch for
    approximate: bool = False  # an estimate (written "≈ ", to three significant digits), else a whole count
    words: str = ""  # what follows the number ("(of 2,000,000 stories)"), or the whole phrase where there is none

    def validate(self) -> None:
        if self.passes is None:
            require(not self.approximate and bool(self.words), "a statement without passes needs words, not ≈")
        else:
            require(self.passes >= 0, f"passes must be >= 0, got {self.passes}")
            require(
                self.approximate or self.passes == round(self.passes),
                f"passes that are not approximate are whole, got {self.passes}",
            )


# --------------------------------------------------------------------------------------------------
# Training configuration (model- and data-agnostic)


@dataclass(frozen=True)
class TrainConfig(ConfigBase):
    batch_size: int = 16  # sequences per micro-batch (per process under DDP)
    grad_accum: int = (
        1  # micro-batches per optimizer step, summed over all processes (global batch = batch_size * grad_accum)
    )
    max_steps: int = 100  # optimizer steps
    lr: float = 6e-4  # peak learning rate
    min_lr: float = 6e-5  # floor of the cosine and linear_floor schedules
    # cosine: nanoGPT warmup+cosine; linear: warmup then linear decay to 0; linear_floor: warmup, linear decay to
    # min_lr, then min_lr (the efficient-transformer README's); constant: warmup then lr
    schedule: Literal["cosine", "linear", "linear_floor", "constant"] = "cosine"
    warmup_steps: int = 0
    decay_steps: int | None = (
        None  # cosine, linear_floor: step where the decay reaches min_lr (nanoGPT's lr_decay_iters); linear: step where lr reaches 0; None = max_steps
    )
    beta1: float = 0.9
    beta2: float = 0.95
    eps: float = 1e-8
    weight_decay: float = 0.1  # applied to parameters with dim >= 2 only
    grad_clip: float = 0.0  # max global gradient norm; 0 disables clipping
    eval_interval: int = 50  # evaluate every this many steps, and after the last step
    eval_batches: int = 10  # batches per split per evaluation (K)
    eval_batch_size: int | None = None  # None = batch_size
    eval_sampling: Literal["strided", "random"] = (
        "strided"  # strided: fixed windows spread over the split; random: fresh random windows each time
    )
    log_interval: int = 10  # train-loss records in metrics.jsonl
    ckpt_interval: int = 0  # checkpoint every this many steps; 0 = at every evaluation
    dtype: Literal["auto", "fp32", "bf16", "fp16"] = "auto"  # auto: bf16 autocast on CUDA when supported, fp32 on CPU
    compile: bool = False  # torch.compile the model (CUDA)
    deterministic: bool = False  # torch.use_deterministic_algorithms (the smoke profile turns it on)

    def validate(self) -> None:
        for name in ("batch_size", "grad_accum", "max_steps", "eval_interval", "eval_batches", "log_interval"):
            require(getattr(self, name) >= 1, f"train.{name} must be >= 1, got {getattr(self, name)}")
        require(self.lr > 0, f"train.lr must be > 0, got {self.lr}")
        require(0 <= self.min_lr <= self.lr, f"train.min_lr must lie in [0, lr={self.lr}], got {self.min_lr}")
        require(self.warmup_steps >= 0, "train.warmup_steps must be >= 0")
        if self.decay_steps is not None:
            require(
                self.decay_steps > self.warmup_steps,
                f"train.decay_steps ({self.decay_steps}) must exceed train.warmup_steps ({self.warmup_steps})",
            )
        require(0 <= self.beta1 < 1 and 0 <= self.beta2 < 1, "train.beta1 and train.beta2 must lie in [0, 1)")
        require(self.eps > 0, "train.eps must be > 0")
        require(self.weight_decay >= 0, "train.weight_decay must be >= 0")
        require(self.grad_clip >= 0, "train.grad_clip must be >= 0 (0 disables clipping)")
        require(self.ckpt_interval >= 0, "train.ckpt_interval must be >= 0 (0 = at every evaluation)")
        if self.eval_batch_size is not None:
            require(self.eval_batch_size >= 1, "train.eval_batch_size must be >= 1 or None")

    @property
    def global_batch(self) -> int:
        return self.batch_size * self.grad_accum


def build_dataclass(cls, d: Mapping):
    """Rebuild a (possibly nested) config dataclass from its asdict() form; JSON lists become tuples."""
    hints = get_type_hints(cls)
    kwargs = {}
    for f in fields(cls):
        if f.name not in d:
            continue
        value = d[f.name]
        hint = hints[f.name]
        inner = [a for a in (get_args(hint) or (hint,)) if is_dataclass(a)]
        if inner and isinstance(value, Mapping):
            value = build_dataclass(inner[0], value)
        elif isinstance(value, list):
            value = tuple(value)
        kwargs[f.name] = value
    unknown = set(d) - {f.name for f in fields(cls)}
    if unknown:
        raise ConfigError(f"{cls.__name__} has no fields {sorted(unknown)}; valid: {[f.name for f in fields(cls)]}")
    return cls(**kwargs)


def digest(obj) -> str:
    blob = json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:12]


# --------------------------------------------------------------------------------------------------
# Overrides: "train.lr=1e-3" style


def parse_value(text: str):
    """Parse a command-line value: Python literals, true/false, none/null; anything else stays a string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def parse_overrides(items) -> dict[str, Any]:
    """['a.b=1', ...] -> {'a.b': 1}; a missing '=' is an error."""
    out: dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise ConfigError(f"override {item!r} must look like key=value, e.g. train.lr=1e-3")
        key, _, value = item.partition("=")
        out[key.strip()] = parse_value(value)
    return out


def flat_keys(cfg, prefix: str = "") -> list[str]:
    keys = []
    for f in fields(cfg):
        value = getattr(cfg, f.name)
        if is_dataclass(value):
            keys += flat_keys(value, f"{prefix}{f.name}.")
        else:
            keys.append(f"{prefix}{f.name}")
    return keys


def _coerce(value, hint):
    """Make a parsed override fit its field: int -> float, and back to the raw text for str fields."""
    if _matches(value, hint):
        return value
    if not isinstance(value, str) and _matches(str(value), hint):
        return str(value)
    return value  # the dataclass check reports the mismatch with the field's expected type


def apply_overrides(cfg, overrides: Mapping[str, Any]):
    """Return a copy of ``cfg`` with dotted-path overrides applied, then validated once.

    Every path is checked first (unknown keys are errors that list the valid ones); each config dataclass is then
    rebuilt once with all of its overrides, so ``data.tokenizer=bpe`` and ``data.vocab_size=5000`` can be given in
    either order. Rules between configs (e.g. the model's vocabulary against the data's) run last.
    """
    tree: dict = {}
    for key, value in overrides.items():
        node, obj, path = tree, cfg, key.split(".")
        for i, part in enumerate(path):
            names = [f.name for f in fields(obj)]
            if part not in names:
                valid = flat_keys(cfg)
                raise ConfigError(f"unknown config key {key!r}{suggest(key, valid)}; valid keys: {', '.join(valid)}")
            current = getattr(obj, part)
            last = i == len(path) - 1
            if last and is_dataclass(current):
                raise ConfigError(
                    f"{key!r} is a group of settings; set its fields, e.g. {key}.{fields(current)[0].name}=..."
                )
            if not last and not is_dataclass(current):
                raise ConfigError(f"{'.'.join(path[: i + 1])} in {key!r} is a plain value and has no sub-keys")
            if last:
                node[part] = _coerce(value, get_type_hints(type(obj))[part])
            else:
                node = node.setdefault(part, {})
                obj = current
    return _rebuild(cfg, tree)


def _rebuild(obj, changes: Mapping[str, Any]):
    values = {
        name: _rebuild(getattr(obj, name), sub) if isinstance(sub, dict) else sub for name, sub in changes.items()
    }
    return dataclasses.replace(obj, **values) if values else obj


__all__ = [
    "PROFILES",
    "ConfigBase",
    "ConfigError",
    "TrainConfig",
    "WriteUpPasses",
    "apply_overrides",
    "build_dataclass",
    "check_profile",
    "digest",
    "flat_keys",
    "parse_overrides",
    "parse_value",
    "require",
    "suggest",
]
