"""The run definition: what a run is (:class:`RunConfig`) and what names it (:class:`RunSpec`, its key).

A run is fully described by a model config (``lmcompanion.models``), a data config (``lmcompanion.data``), a
:class:`~lmcompanion.config.TrainConfig`, a seed and a device, trained by one procedure (the shared trainer, or a
chapter's own, e.g. the formal chapter's literal ED-Training) with that procedure's settings.

Its key covers exactly what the result depends on: the full config, the procedure and its settings, the data's
fingerprint (the content of what it reads) and the digest of the code it executes (the closure of the procedure's,
the family's and the data kind's modules; see :mod:`lmcompanion.fingerprint`). :func:`spec` computes it once; the
run store names the run's folder by it and records every part of it in the run's provenance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, is_dataclass
from typing import Any, Literal, Mapping

from . import data, fingerprint, models
from .config import ConfigBase, TrainConfig, build_dataclass, digest, require

TRAINER = "lmcompanion.train.trainer"  # the module of the shared trainer's procedure


@dataclass(frozen=True)
class RunConfig(ConfigBase):
    name: str  # the experiment's name, e.g. "ar_ed/mse_pos_sub"
    model: Any  # a model config dataclass from lmcompanion.models
    data: Any  # a data config dataclass from lmcompanion.data
    train: TrainConfig
    seed: int = 0
    device: Literal["cpu", "cuda"] = "cpu"

    def validate(self) -> None:
        require(
            is_dataclass(self.model) and getattr(self.model, "family", None) in models.FAMILIES,
            f"RunConfig.model must be a model config of one of the families {sorted(models.FAMILIES)}",
        )
        require(
            is_dataclass(self.data) and getattr(self.data, "kind", None) in data.KINDS,
            f"RunConfig.data must be a data config of one of the kinds {sorted(data.KINDS)}",
        )
        require(self.seed >= 0, f"seed must be >= 0, got {self.seed}")
        check = getattr(self.data, "check_model", None)
        if check is not None:
            check(self.model)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "model": {"family": self.model.family, **dataclasses.asdict(self.model)},
            "data": {"kind": self.data.kind, **dataclasses.asdict(self.data)},
            "train": dataclasses.asdict(self.train),
            "seed": self.seed,
            "device": self.device,
        }

    @classmethod
    def from_dict(cls, d: Mapping) -> "RunConfig":
        model_d, data_d = dict(d["model"]), dict(d["data"])
        model_cls = models.config_class(model_d.pop("family"))
        data_cls = data.config_class(data_d.pop("kind"))
        return cls(
            name=d["name"],
            model=build_dataclass(model_cls, model_d),
            data=build_dataclass(data_cls, data_d),
            train=build_dataclass(TrainConfig, d["train"]),
            seed=d["seed"],
            device=d["device"],
        )

    def hash(self) -> str:
        """Short, stable digest of the full config alone (no code, no data)."""
        return digest(self.to_dict())

    # What a run computes: the one definition the chapters' cost tables, compute budgets and benchmarks share.

    def tokens_per_step(self) -> int:
        """Tokens of one optimizer step: global batch x tokens per sequence (the data config says what a sequence
        holds for this model, e.g. one target per retrieval item)."""
        return self.train.global_batch * self.data.tokens_per_sequence(self.model)

    def tokens(self) -> int:
        """Training tokens of the whole run: steps x :meth:`tokens_per_step`."""
        return self.train.max_steps * self.tokens_per_step()

    def flops_per_step(self) -> float:
        """Counted training FLOPs (forward and backward) of one optimizer step: the model's counted FLOPs per token
        (``Model.flops_per_token``, on the meta device) x :meth:`tokens_per_step`."""
        return models.flops_per_token(self.model) * self.tokens_per_step()

    def flops(self) -> float:
        """Counted training FLOPs of the whole run."""
        return self.train.max_steps * self.flops_per_step()


def settings_dict(settings) -> dict | None:
    return dataclasses.asdict(settings) if dataclasses.is_dataclass(settings) else settings


@dataclass(frozen=True)
class RunSpec:
    """Everything that names one run; computed once (:func:`spec`) and recorded in its provenance."""

    config: RunConfig
    procedure: str  # "module.function" of the training procedure
    settings: dict | None  # the procedure's own settings (None for the shared trainer)
    modules: tuple[str, ...]  # the project modules the run executes
    code: str  # digest of their normalized code
    data: str  # the data's fingerprint
    key: str  # digest of all of the above

    def provenance(self) -> dict:
        return {
            "key": self.key,
            "procedure": self.procedure,
            "code_fingerprint": self.code,
            "code_modules": list(self.modules),
            "data_fingerprint": self.data,
        }


def spec(cfg: RunConfig, procedure: str = f"{TRAINER}.train", settings=None) -> RunSpec:
    """The identity of ``cfg`` trained by ``procedure`` (a "module.function" name) with ``settings``."""
    module = procedure.rpartition(".")[0]
    modules = fingerprint.closure(module, models.module_of(cfg.model.family), data.module_of(cfg.data.kind))
    code = fingerprint.digest(modules)
    data_fp = cfg.data.fingerprint()
    settings = settings_dict(settings)
    key = digest({"config": cfg.to_dict(), "procedure": procedure, "settings": settings, "code": code, "data": data_fp})
    return RunSpec(cfg, procedure, settings, modules, code, data_fp, key)


__all__ = ["RunConfig", "RunSpec", "TRAINER", "settings_dict", "spec"]
