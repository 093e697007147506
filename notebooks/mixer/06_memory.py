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
# # Training memory against context length
#
# The write-up's two tables: MB of GPU memory for one unbatched forward and backward pass without the language
# modelling head, for a flat mixer and a same-width transformer ($d_{model}=1024$), 4, 8 and 16 layers, 512 to 8,192
# tokens, on a 12 GB RTX 3060 ("OOM" beyond it). The mixer's memory grows slowly with the context (its $L \times L$
# convolution adds $L^2$ weights per layer); the transformer's fast (attention saves $h \cdot L^2$ probabilities per
# layer), until it no longer fits.
#
# We compute the whole table on any machine without allocating it: the models are built on PyTorch's meta device,
# run forward and backward on a zero batch, and every tensor created is followed: the parameters, the mask
# buffers, and the most bytes alive at once during the pass (activations saved for backward, temporaries,
# gradients as they appear). That is `one_pass` (fp32). The write-up does not say how it measured; its ~2 GB at the
# smallest sizes suggest whole-process memory (CUDA context included), so compare growth, not absolute values.
# The transformer has 16 heads (not stated for this table; the write-up's transformer tables use 16) and takes
# attention's math path, which saves the $L \times L$ probabilities, as the 2024 Hugging Face eager attention did.
# On a GPU the cells that fit are also measured with `torch.cuda.max_memory_allocated`.
#
# This page trains nothing; the profile parameters only set where it runs.

# %% tags=["parameters"]
profile = "cpu"  # smoke | cpu | gpu | paper
device = "auto"  # auto | cpu | cuda
seed = 0  # first seed; the runs use seeds seed, seed+1, ...
n_seeds = None  # seeds per arm (None: the profile's default)
max_steps = None  # override the number of training steps (None: the profile's)
overrides = {}  # any other config field, by dotted key, e.g. {"train.lr": 1e-3}

# %%
from lmcompanion import experiments, nb, plots, tables
from lmcompanion.chapters import mixer

S = nb.setup(profile=profile, device=device, seed=seed, n_seeds=n_seeds, max_steps=max_steps, overrides=overrides)
print(S.describe())

# %%
counted = mixer.analysis.memory_counts()
measured = mixer.analysis.memory_measured() if S.device == "cuda" else None
print("measured on this machine's GPU" if measured is not None else "no GPU here: counted values only")

# %%
mixer.analysis.memory_table(counted, measured)

# %% [markdown]
# ## Growth with context
#
# MB that each longer context adds over 512 tokens: ours counted, and the write-up's where both fit in its 12 GB.
# Differences cancel a constant offset such as the CUDA context, so these are the numbers to compare. The
# transformer's 16 heads are a guess (several original configurations fall back to 32 heads), and the attention
# implementation decides how many copies of the probabilities a pass keeps.

# %%
mixer.analysis.growth_table(counted)

# %% mystnb={"figure": {"caption": "Counted memory of one training pass against context, mixer (solid) and transformer (dashed), 4/8/16 layers, d_model=1024; the grey line is the write-up's 12 GB.", "name": "mixer-memory"}}
fig = mixer.analysis.memory_figure(counted)

# %% [markdown]
# ## Training memory as the write-up trained: fp16 mixed precision, its batches
#
# The write-up's earlier figures, all for training with the HF Trainer's `fp16=True` on its 12 GB RTX 3060 at 512
# tokens: at batch 16 the Llama $d_{model}=128$ "exceeds 10 GB" against 2.4 GB for the mixer of double the width
# (its "Training" section), the same two models at 10.7 GB and 1.8 GB "for 16-bit training" (its "Mixer Inference"
# section: one model, two figures), the flat $d_{model}=512$ mixer at 3.59 GB and the $d_{model}=256$ transformer at
# "more than double the memory". Its batch choices rest on the same 12 GB: the $d_{model}=256$ Llama is "the largest
# 8-layer transformer that will fit" at batch 16, the $d_{model}=512$ one "can just barely fit" at batch 8, the
# $d_{model}=1024$ one "requires a reduction to a batch size of 4", and batch 32 is "the largest power of two that
# fits" for the flat $d_{model}=1024$ mixer.
#
# The same memory method counts a whole training step of each (parameters, gradients, AdamW's two moments, and the
# most activation bytes alive at once, the language-model head included) in fp16 mixed precision: the model, its
# gradients and AdamW's state in fp32, the forward under CUDA's autocast policy (matrix products, convolutions and
# attention read fp16 copies, softmax, normalisations and the loss fp32; `lmcompanion.memory.AutocastPolicy`). The
# Llamas have the tables' 16 heads; their count with 32 heads, the default several original configurations fall
# back to, is shown beside and not judged. A GPU adds its CUDA context, the allocator's slack and the library's
# workspace, which no count includes: a count is a lower bound of what the write-up measured (its 10.7 GB Llama counts
# less than a third of that here). So the rows never refute a measured figure with a count. A ratio of two counts bounds
# neither measured figure: those rows are *not comparable*. A limit row does not hold only where a model the write-up
# fits already counts above 12 GiB; a count below 12 GiB shows nothing, and such a row is *not comparable*. On a GPU
# the steps are also measured.

# %%
measured_amp = mixer.facts.memory_measured() if S.device == "cuda" else None
mixer.facts.memory_table(measured_amp)

# %% [markdown]
# ## Verdicts of this page
#
# The claims this page decides (the verdict notebook gathers every claim of the chapter).

# %%
nb.verdict_table(nb.page_rows(S, "mixer", "06_memory", {}, memory=counted), "mixer", S.profile, S)

# %% [markdown]
# ## Provenance
#
# Where this page's numbers came from: the profile and seeds, the package's commit, the machine, and the data and
# tokenizers of the runs it used (each run's own record is its folder in the run store).

# %% tags=["nbval-ignore-output"]
nb.provenance(S)
