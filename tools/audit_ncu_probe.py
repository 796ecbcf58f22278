"""Probe for the audit's step 4 (issue 40): the Llama-style decode step of tools/audit_record.py with two steps
inside a cudaProfilerStart/Stop range, for ncu to measure its kernels there only:

    ncu --profile-from-start off --clock-control none --cache-control all --csv --page raw \
        --metrics dram__bytes_read.sum,dram__bytes_write.sum,gpu__time_duration.sum \
        --log-file OUT/ncu.csv python tools/audit_ncu_probe.py
"""
import torch
import transformers

cfg = transformers.LlamaConfig(hidden_size=4096, intermediate_size=11008, num_hidden_layers=4, num_attention_heads=32,
                               num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096)
torch.set_default_dtype(torch.bfloat16)
with torch.device("cuda"):
    model = transformers.LlamaForCausalLM(cfg)
torch.set_default_dtype(torch.float32)
model.eval()
ids = torch.randint(0, cfg.vocab_size, (1, 256), device="cuda", generator=torch.Generator("cuda").manual_seed(0))
with torch.inference_mode():
    o = model(input_ids=ids, use_cache=True)
    past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
    for i in range(4):
        if i == 2:
            torch.cuda.synchronize()
            torch.cuda.profiler.start()
        o = model(input_ids=tok, past_key_values=past, use_cache=True)
        past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
print("probe done")
