"""Would training the seeds of one arm together pay at `cpu`? (issue 34's item 4) One training step of S seeds of an
experiment's `cpu` model, two ways, on random token ids: S models one after another (forward, backward, fused-style
foreach AdamW each), and one batched ensemble (``torch.func.stack_module_state`` + ``vmap`` over
``grad_and_value``, each seed with its own batch, one AdamW over the stacked weights). Prints the milliseconds a step
of all S seeds takes each way (the best of three rounds of ten steps, after two warm-up steps) and their ratio.

    python tests/scripts/bench_ensemble.py deepsight/mse_d11 [--seeds 5] [--threads 1]

A measurement only: it trains nothing the book reads and writes nothing."""

import argparse
import copy
import time

import torch
from torch.func import functional_call, grad_and_value, stack_module_state, vmap

from lmcompanion import experiments, models


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("experiment", help="an experiment trained by the shared trainer, e.g. deepsight/mse_d11")
    ap.add_argument("--seeds", type=int, default=5, help="seeds trained together (default 5, the headline arms')")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1, as make book's workers)")
    ap.add_argument("--profile", default="cpu", choices=("smoke", "cpu"))
    args = ap.parse_args(argv)
    if args.seeds < 1 or args.threads < 1:
        ap.error("--seeds and --threads must be at least 1")
    torch.set_num_threads(args.threads)
    cfg = experiments.config(args.experiment, args.profile, device="cpu")
    nets = []
    for seed in range(args.seeds):
        torch.manual_seed(seed)
        nets.append(models.build(cfg.model))
    batch, length, vocab = cfg.train.batch_size, cfg.model.context_size, cfg.model.vocab_size
    g = torch.Generator().manual_seed(0)
    x = torch.randint(0, vocab, (args.seeds, batch, length), generator=g)  # each seed its own batch
    y = torch.randint(0, vocab, (args.seeds, batch, length), generator=g)
    adamw = dict(lr=1e-3, weight_decay=0.1, foreach=True)

    optimizers = [torch.optim.AdamW(m.parameters(), **adamw) for m in nets]

    def one_after_another():
        for i, m in enumerate(nets):
            m(x[i], y[i]).loss.backward()
            optimizers[i].step()
            optimizers[i].zero_grad(set_to_none=True)

    params, buffers = stack_module_state(nets)
    params = {k: v.detach() for k, v in params.items()}
    base = copy.deepcopy(nets[0]).to("meta")
    step = vmap(
        grad_and_value(lambda p, b, xi, yi: functional_call(base, (p, b), (xi,), {"targets": yi}).loss),
        randomness="different",
    )
    stacked = torch.optim.AdamW(list(params.values()), **adamw)

    def ensemble():
        grads, _ = step(params, buffers, x, y)
        for k, p in params.items():
            p.grad = grads[k]
        stacked.step()
        stacked.zero_grad(set_to_none=True)

    best = {}
    for fn in (one_after_another, ensemble):
        fn(), fn()
    for _ in range(3):  # interleaved rounds: a machine that slows down slows both
        for fn in (one_after_another, ensemble):
            t0 = time.perf_counter()
            for _ in range(10):
                fn()
            best[fn.__name__] = min(best.get(fn.__name__, float("inf")), (time.perf_counter() - t0) / 10)
    seq, ens = best["one_after_another"], best["ensemble"]
    print(
        f"{args.experiment} at {args.profile}, {args.seeds} seeds, {torch.get_num_threads()} thread(s): "
        f"one after another {seq * 1e3:.1f} ms a step, ensemble {ens * 1e3:.1f} ms, speed-up {seq / ens:.2f}x"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
