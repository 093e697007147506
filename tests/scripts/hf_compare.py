"""Our transformers against Hugging Face transformers 4.42.3 on shared weights: a script, not a CI test (transformers
is not a dependency of the package).

Run it with transformers importable, e.g. from a throwaway folder:

    pip install --target /tmp/hf --no-deps transformers==4.42.3 tokenizers==0.19.1 huggingface-hub==0.23.4 \\
        safetensors regex
    PYTHONPATH=src:/tmp/hf python tests/scripts/hf_compare.py

It builds HF's ``OpenAIGPTLMHeadModel`` (the write-up's GPT, ``afn="gelu"``) and ``LlamaForCausalLM`` at a tiny size,
copies their weights into ours, and prints the largest difference of the logits (eval mode, float64); for the GPT
(its weights drawn with std 0.3, so that pre-activations leave the region where both GELUs agree) also with our MLP
switched to the exact erf GELU, which is what issue 22 found we had. HF's Llama computes its RMSNorm in float32,
so that pair agrees to float32 rounding only.
"""

from __future__ import annotations

import torch

from lmcompanion import models
from lmcompanion.models.layers import MLP
from lmcompanion.models.transformer import gpt_config, llama_config

V, L, D, N, H = 97, 16, 32, 2, 4


def gpt_pair():
    from transformers import OpenAIGPTConfig, OpenAIGPTLMHeadModel

    torch.manual_seed(0)
    hf = (
        OpenAIGPTLMHeadModel(OpenAIGPTConfig(vocab_size=V, n_positions=L, n_embd=D, n_layer=N, n_head=H, afn="gelu"))
        .double()
        .eval()
    )
    with torch.no_grad():  # weights of a trained size (HF's init, std 0.02, keeps every pre-activation near 0)
        for param in hf.parameters():
            param.normal_(0.0, 0.3)
    ours = models.build(gpt_config(D, N, H, vocab_size=V, context_size=L)).double().eval()
    t, sd = hf.transformer, {}
    sd["wte.weight"] = t.tokens_embed.weight
    sd["wpe.weight"] = t.positions_embed.weight
    for i, b in enumerate(t.h):
        p = f"blocks.{i}."
        sd[p + "attn.c_attn.weight"], sd[p + "attn.c_attn.bias"] = b.attn.c_attn.weight.T, b.attn.c_attn.bias
        sd[p + "attn.residual_proj.weight"], sd[p + "attn.residual_proj.bias"] = (
            b.attn.c_proj.weight.T,
            b.attn.c_proj.bias,
        )
        sd[p + "norm_1.weight"], sd[p + "norm_1.bias"] = b.ln_1.weight, b.ln_1.bias
        sd[p + "mlp.c_fc.weight"], sd[p + "mlp.c_fc.bias"] = b.mlp.c_fc.weight.T, b.mlp.c_fc.bias
        sd[p + "mlp.residual_proj.weight"], sd[p + "mlp.residual_proj.bias"] = b.mlp.c_proj.weight.T, b.mlp.c_proj.bias
        sd[p + "norm_2.weight"], sd[p + "norm_2.bias"] = b.ln_2.weight, b.ln_2.bias
    sd["lm_head.weight"] = t.tokens_embed.weight
    missing, unexpected = ours.load_state_dict({k: v.detach().clone() for k, v in sd.items()}, strict=False)
    assert not unexpected and all(k.endswith("mask") for k in missing), (missing, unexpected)
    return hf, ours


def llama_pair():
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    hf = (
        LlamaForCausalLM(
            LlamaConfig(
                vocab_size=V,
                hidden_size=D,
                intermediate_size=4 * D,
                num_hidden_layers=N,
                num_attention_heads=H,
                max_position_embeddings=L,
                attn_implementation="eager",
            )
        )
        .double()
        .eval()
    )
    ours = models.build(llama_config(D, N, H, vocab_size=V, context_size=L)).double().eval()
    m, sd = hf.model, {}
    sd["wte.weight"] = m.embed_tokens.weight
    for i, b in enumerate(m.layers):
        p, a = f"blocks.{i}.", b.self_attn
        sd[p + "attn.c_attn.weight"] = torch.cat([a.q_proj.weight, a.k_proj.weight, a.v_proj.weight])
        sd[p + "attn.residual_proj.weight"] = a.o_proj.weight
        sd[p + "norm_1.weight"], sd[p + "norm_2.weight"] = b.input_layernorm.weight, b.post_attention_layernorm.weight
        sd[p + "mlp.gate_proj.weight"], sd[p + "mlp.up_proj.weight"] = b.mlp.gate_proj.weight, b.mlp.up_proj.weight
        sd[p + "mlp.down_proj.weight"] = b.mlp.down_proj.weight
    sd["norm_f.weight"], sd["lm_head.weight"] = m.norm.weight, hf.lm_head.weight
    ours.load_state_dict({k: v.detach().clone() for k, v in sd.items()})
    return hf, ours


def largest_difference(hf, ours) -> float:
    idx = torch.randint(0, V, (3, L), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        return float((hf(idx).logits - ours(idx).logits).abs().max())


if __name__ == "__main__":
    import transformers

    print(f"transformers {transformers.__version__}, torch {torch.__version__}")
    hf, ours = gpt_pair()
    print(
        f"OpenAIGPTLMHeadModel vs ours (tanh GELU):          max |logit difference| = {largest_difference(hf, ours):.2e}"
    )
    for block in ours.blocks:  # what the package had before issue 22: the exact erf GELU
        erf = MLP(D, True, 0.0).double().eval()
        erf.load_state_dict(block.mlp.state_dict())
        block.mlp = erf
    print(
        f"OpenAIGPTLMHeadModel vs ours with the exact GELU:  max |logit difference| = {largest_difference(hf, ours):.2e}"
    )
    hf, ours = llama_pair()
    print(
        f"LlamaForCausalLM (eager) vs ours:                  max |logit difference| = {largest_difference(hf, ours):.2e}"
    )
