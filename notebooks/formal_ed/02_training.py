# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # ED-Training: the literal algorithm and a batched AdamW run
#
# The write-up trains the model with ED-Training. It makes $T$ passes over the $n$ examples in order. For each
# example it computes the summed log loss $J(\theta) = -\sum_{j=1}^{\ell_X-1} \log P(\theta)_{x_{j+1}, j}$ and
# takes one plain gradient step $\theta \leftarrow \theta - \eta \nabla J(\theta)$. This notebook runs that
# algorithm as written on a task whose answers can be checked. Beside it, it trains the same model, from the
# same initial weights, the way the other chapters train: random batches, the loss averaged per token, AdamW
# with warmup and cosine decay, through the book's shared trainer. It then measures both on held-out examples.
#
# Re-run at another profile with
# `python -m lmcompanion run-notebook notebooks/formal_ed/02_training.py --profile gpu -p device cuda`.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per method (None: the profile's default)
max_steps = None  # override the AdamW run's number of steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 3e-4, "data.task": "sort"}
literal_epochs = None  # ED-Training's T (None: the profile's)
literal_eta = None  # ED-Training's learning rate η (None: the profile's)
literal_examples = None  # ED-Training's n, the first n training examples (None: the profile's)

# %%
from lmcompanion import nb, plots, tables
from lmcompanion.chapters import formal_ed as fe
from lmcompanion.experiments.formal_ed import LITERAL, NAME, literal_config

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
cfg = S.config(NAME)
lit = literal_config(S.profile, T=literal_epochs, eta=literal_eta, n=literal_examples)
print(S.describe())
print(f"ED-Training: T = {lit.T} epochs over the first n = {lit.n:,} training examples, η = {lit.eta}, "
      f"{lit.evals} loss evaluations")
tc = cfg.train
print(f"AdamW: {tc.max_steps} steps of {tc.global_batch} examples, peak lr {tc.lr}, {tc.warmup_steps} warmup steps, "
      f"cosine to {tc.min_lr}, betas ({tc.beta1}, {tc.beta2}), weight decay {tc.weight_decay}, clip {tc.grad_clip}")

# %% [markdown]
# ## The task
#
# The examples are **generated**: the source $z$ is a string of decimal digits, and the answer is the same
# string reversed (`data.task`; `sort` is the other option). The model must write
# $x = [\texttt{bos}] + \text{answer} + [\texttt{eos}]$, so every answer can be checked exactly. The vocabulary
# has the three special tokens PAD = 0, BOS = 1 and EOS = 2, and the ten digits as 3 to 12. The train and
# held-out splits hold distinct strings, and no held-out source occurs in train.

# %%
fe.task_table(cfg.data)

# %% [markdown]
# What this profile changes from the `paper` profile (the model, the data and the AdamW run):

# %%
nb.config_diff([NAME], S.profile)

# %% [markdown]
# Each batch is padded on the right to a fixed width. The source $z$ comes with `z_valid`, which marks its
# real tokens: the encoder and the cross-attention give padded columns zero weight. The decoder's input is
# $x_{1:\ell_X-1}$ (BOS and the answer), and the targets are $x_{2:\ell_X}$ (the answer and EOS), padded with
# −100, which the loss skips. Together these give exactly the terms of $J$: column $\ell_X$ of $P$ predicts
# nothing and is not computed. Here are the first training examples as the model receives them:

# %%
fe.encoding_table(cfg.data, n=2)

# %% [markdown]
# ## ED-Training, as written
#
# `lmcompanion.models.formal_ed.ed_training` (shown on the chapter's first page) runs the double loop over
# epochs and examples and takes a plain step $\theta \leftarrow \theta - \eta \nabla J$ after every example,
# where $J$ is the summed loss of that one example. The run starts from the weights the AdamW run of the same
# seed starts from. At evenly spaced updates the loss is estimated on the trainer's own evaluation batches, so
# both methods are measured the same way. Finished runs are cached in the run store, keyed by their config and
# the code.

# %%
literal_runs = S.runs(LITERAL, settings=lit)

# %% [markdown]
# ## The batched run through the shared trainer
#
# These are the same model, data and initial weights. Batches are drawn at random with replacement. The loss
# is the mean of $-\log P$ over the batch's answer tokens. The optimizer is AdamW with linear warmup, cosine
# decay and gradient clipping (its settings are printed at the top of this notebook).

# %%
adamw_runs = S.runs(NAME)
display(nb.this_page(S, {"ED-Training as written": literal_runs, "AdamW": adamw_runs}))

# %% mystnb={"figure": {"caption": "Loss against the number of training examples seen (log scale), for ED-Training as written (plain SGD, one example at a time, summed loss) and for batched AdamW through the shared trainer, from the same initial weights. The 'training loss' panel: ED-Training's is the mean of J/(ℓ_X−1) since the previous point; the 'held-out loss (eval mode)' panel: the loss on fixed held-out batches. Lines: {glue:md}`seeds-formal-ed-training-curves`. The dashed line is the unigram loss of the answer tokens (their frequencies alone), the learning gate's reference line.", "name": "formal-ed-training-curves"}}
nb.caption("formal-ed-training-curves", {"ED-Training as written": literal_runs, "AdamW": adamw_runs})
fig = plots.curves(fe.curves(literal_runs, adamw_runs), "examples",
                   {"loss": "training loss", "val": "held-out loss (eval mode)"},
                   xlabel="training examples seen", ylabel="cross-entropy (nats/token)", logx=True,
                   reference=fe.unigram_reference(adamw_runs[0].config))

# %% [markdown]
# ## What each method learned
#
# Losses are per answer token. Exact match means that ED-Inference at $\tau = 0$, started from
# $[\texttt{bos}]$, wrote the answer followed by EOS, with nothing missing and nothing extra. The table says how
# many examples of each split were checked.

# %%
fe.accuracy_table({"ED-Training (literal)": literal_runs, "AdamW (shared trainer)": adamw_runs}, cfg.data)

# %% [markdown]
# ## Time
#
# Training time only, without the evaluations, measured in this build on this machine.

# %% tags=["nbval-ignore-output"]
import pandas as pd

pd.DataFrame(
    [{"method": "ED-Training (literal)", "seed": r.seed, "updates": r.summary["steps"],
      "examples seen": r.summary["steps"], "train time (s)": tables.number(r.summary["train_time_s"])} for r in literal_runs]
    + [{"method": "AdamW (shared trainer)", "seed": r.seed, "updates": r.summary["steps"],
        "examples seen": r.summary["steps"] * r.config.train.global_batch,
        "train time (s)": tables.number(r.summary["train_time_s"])} for r in adamw_runs]
).set_index(["method", "seed"])

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
