"""The models §11 audits: transformers models built from configs with random weights (no download), bf16, on the
GPU, decoded at batch 1 with a KV cache -- small enough for one H200 and a short recording, shaped like the models
they are named for. transformers is the `[audit]` extra's, never the learner's base environment: only a live
measurement imports it.

    python -m launchlab.sections.s11_audit.models NAME [--steps N] [--backend B] [--prefill P]

runs NAME's decode step N times, each inside `audit.step()` (what ncu profiles: launchlab.audit.floors).
"""
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import dataclass

from launchlab.audit import profilers

PREFILL, WARMUP = 256, 4
STEP_TOKENS = 1                      # batch 1, one token a step


@dataclass(frozen=True)
class ModelSpec:
    name: str
    label: str                       # in words, for tables and figures
    model_cls: str                   # transformers' class
    config_cls: str
    config: dict                     # the config's arguments (the rest are transformers' defaults)


MODELS = {
    "llama": ModelSpec("llama", "Llama-style dense (4 layers, hidden 4,096, GQA 32/8)", "LlamaForCausalLM",
                       "LlamaConfig",
                       dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=4, num_attention_heads=32,
                            num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096)),
    "deepseek_v3": ModelSpec("deepseek_v3", "DeepSeek-V3's MLA (2 dense layers, 16 heads: one rank's at tp = 8)",
                             "DeepseekV3ForCausalLM", "DeepseekV3Config",
                             dict(num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=16,
                                  max_position_embeddings=4096)),
    "qwen3_next": ModelSpec("qwen3_next", "Qwen3-Next (4 layers: 3 gated delta rule, 1 attention; PyTorch fallbacks)",
                            "Qwen3NextForCausalLM", "Qwen3NextConfig",
                            dict(num_hidden_layers=4, max_position_embeddings=4096)),
}


def spec(name: str) -> ModelSpec:
    if name not in MODELS:
        raise ValueError(f"no model {name!r}; §11 audits {', '.join(MODELS)}")
    return MODELS[name]


class Decoder:
    """One model and its KV cache: prefill once, then `step()` decodes one token (greedy, batch 1)."""

    def __init__(self, name: str, prefill: int = PREFILL, seed: int = 0):  # pragma: no mutate block (live only)
        import torch
        import transformers
        s = spec(name)
        self.spec, self.torch = s, torch
        self.config = getattr(transformers, s.config_cls)(**s.config)
        t0 = time.perf_counter()
        torch.set_default_dtype(torch.bfloat16)
        try:
            with torch.device("cuda"):
                self.model = getattr(transformers, s.model_cls)(self.config)
        finally:
            torch.set_default_dtype(torch.float32)
        self.model.eval()
        self.build_s = time.perf_counter() - t0
        self.parameters = sum(p.numel() for p in self.model.parameters())
        g = torch.Generator(device="cuda").manual_seed(seed)
        ids = torch.randint(0, self.config.vocab_size, (1, prefill), device="cuda", generator=g)
        with torch.inference_mode():
            o = self.model(input_ids=ids, use_cache=True)
        self.past, self.tok, self.ctx = o.past_key_values, o.logits[:, -1:].argmax(-1), prefill
        self.start = prefill

    def step(self) -> None:  # pragma: no mutate block (live only)
        with self.torch.inference_mode():
            o = self.model(input_ids=self.tok, past_key_values=self.past, use_cache=True)
        self.past, self.tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
        self.ctx += STEP_TOKENS

    def rewind(self, ctx: int) -> None:  # pragma: no mutate block (live only)
        """Crop the KV cache back to ctx tokens: the next step sees the same KV length as one before."""
        drop = self.ctx - ctx
        if drop < 0:
            raise ValueError(f"cannot rewind forward: the cache holds {self.ctx} tokens, asked for {ctx}")
        if drop:
            self.past.crop(-drop)            # a negative crop removes that many tokens (transformers >= 5.17)
        self.ctx = ctx

    def close(self) -> None:  # pragma: no mutate block (live only)
        del self.model, self.past, self.tok
        self.torch.cuda.empty_cache()


def backend(name: str):
    """A context manager that limits SDPA to one backend ("default": no limit)."""
    import contextlib

    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(getattr(SDPBackend, name))


def main(argv=None) -> int:  # pragma: no mutate block (live only: ncu's child)
    p = argparse.ArgumentParser(prog="python -m launchlab.sections.s11_audit.models")
    p.add_argument("name", choices=sorted(MODELS))
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--prefill", type=int, default=PREFILL)
    p.add_argument("--backend", default="default")
    a = p.parse_args(argv)
    d = Decoder(a.name, a.prefill)
    with backend(a.backend):
        for _ in range(WARMUP):
            d.step()
        d.torch.cuda.synchronize()
        for _ in range(a.steps):
            with profilers.step():
                d.step()
    d.torch.cuda.synchronize()
    print(f"{a.name}: {a.steps} steps at ctx {d.ctx}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
