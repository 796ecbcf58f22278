"""Record the audit's real traces on a GPU (issue 40): transformers decode steps under torch.profiler, and the
course's own CuPy decode step under CUPTI's activity API (cupti-python).

    python tools/audit_record.py OUT [llama deepseek_v3 qwen3_next course]      (on the H200)

- A transformers model: built from a config with random weights (no download), bf16, on the GPU; a 256-token
  prefill, WARMUP decode steps, then STEPS batch-1 decode steps under torch.profiler (CPU and CUDA activity), each
  inside record_function("launchlab.audit.step") and synchronized. OUT/<name>.trace.json.gz is the Chrome trace
  exactly as torch exported it, gzipped.
- course: the course's decode step (93 layers, ctx 131,072, main's gates) warmed up, then 3 eager steps under
  CUPTI's CONCURRENT_KERNEL activity. OUT/course_decode.cupti.json.gz holds every kernel record CUPTI gave (the
  fields it names), the GPU's properties, and the course's own launch log of the same steps (site, kernel, grid,
  block) to check the records against.
- OUT/audit_provenance.json: the GPU, driver, versions, each model's config and how long each took; a model that
  fails is recorded with its error, and the others still run. Prints a table last.
"""
from __future__ import annotations

import datetime
import gzip
import json
import shutil
import sys
import time
import traceback
from pathlib import Path

PREFILL, WARMUP, STEPS = 256, 4, 8
STEP_MARK = "launchlab.audit.step"


def configs() -> dict:
    """name -> (model class name, config class name, config arguments): small enough for one H200 and a short
    recording, shaped like the models they are named for (one rank's heads for DeepSeek-V3 at tp = 8)."""
    return {
        "llama": ("LlamaForCausalLM", "LlamaConfig",
                  dict(hidden_size=4096, intermediate_size=11008, num_hidden_layers=4, num_attention_heads=32,
                       num_key_value_heads=8, vocab_size=32000, max_position_embeddings=4096)),
        "deepseek_v3": ("DeepseekV3ForCausalLM", "DeepseekV3Config",
                        dict(num_hidden_layers=2, num_attention_heads=16, num_key_value_heads=16,
                             max_position_embeddings=4096)),
        "qwen3_next": ("Qwen3NextForCausalLM", "Qwen3NextConfig",
                       dict(num_hidden_layers=4, max_position_embeddings=4096)),
    }


def record_model(name: str, out: Path) -> dict:
    import torch
    import transformers
    from torch.profiler import ProfilerActivity, profile, record_function
    model_cls, cfg_cls, kw = configs()[name]
    cfg = getattr(transformers, cfg_cls)(**kw)
    t0 = time.perf_counter()
    torch.set_default_dtype(torch.bfloat16)
    try:
        with torch.device("cuda"):
            model = getattr(transformers, model_cls)(cfg)
    finally:
        torch.set_default_dtype(torch.float32)
    model.eval()
    build_s = time.perf_counter() - t0
    g = torch.Generator(device="cuda").manual_seed(0)
    ids = torch.randint(0, cfg.vocab_size, (1, PREFILL), device="cuda", generator=g)
    with torch.inference_mode():
        o = model(input_ids=ids, use_cache=True)
        past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
        for _ in range(WARMUP):
            o = model(input_ids=tok, past_key_values=past, use_cache=True)
            past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            for _ in range(STEPS):
                with record_function(STEP_MARK):
                    o = model(input_ids=tok, past_key_values=past, use_cache=True)
                    past, tok = o.past_key_values, o.logits[:, -1:].argmax(-1)
                torch.cuda.synchronize()
    raw = out / f"{name}.trace.json"
    prof.export_chrome_trace(str(raw))
    with open(raw, "rb") as f, gzip.open(out / f"{name}.trace.json.gz", "wb", compresslevel=9) as z:
        shutil.copyfileobj(f, z)
    raw.unlink()
    kernels = sum(1 for e in json.loads(gzip.open(out / f"{name}.trace.json.gz").read())["traceEvents"]
                  if e.get("cat") == "kernel")
    params = sum(p.numel() for p in model.parameters())
    del model, past, o
    torch.cuda.empty_cache()
    return {"model": model_cls, "config": cfg.to_dict(), "parameters": params, "build_s": round(build_s, 2),
            "kernel_events": kernels, "steps": STEPS, "prefill": PREFILL, "warmup": WARMUP,
            "file": f"{name}.trace.json.gz"}


def record_course(out: Path) -> dict:
    # the section's own CUPTI run of the step (realmodels.course_document), written here
    from launchlab.sections.s11_audit import realmodels
    doc = realmodels.course_document()         # its COURSE_STEPS (3) at COURSE_CTX (131,072)
    with gzip.open(out / "course_decode.cupti.json.gz", "wt", compresslevel=9) as z:
        json.dump(doc, z)
    return {"records": len(doc["records"]), "course_launches": sum(len(x) for x in doc["course_log"]),
            "steps": doc["steps"], "file": "course_decode.cupti.json.gz"}


def _version(dist: str) -> str:
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "not installed"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv:
        print(__doc__)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    names = argv[1:] or [*configs(), "course"]
    prov = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "versions": {d: _version(d) for d in ("torch", "transformers", "cupy-cuda13x", "cupti-python")},
            "runs": {}}
    try:
        import torch
        prov["gpu"] = torch.cuda.get_device_name(0)
        prov["sm_count"] = torch.cuda.get_device_properties(0).multi_processor_count
    except Exception as e:  # noqa: BLE001 - the CuPy path needs no torch
        prov["gpu_error"] = str(e)
    for name in names:
        t0 = time.perf_counter()
        try:
            r = record_course(out) if name == "course" else record_model(name, out)
            r["ok"] = True
        except Exception as e:  # noqa: BLE001 - recorded with its error; the other models still run
            r = {"ok": False, "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()[-3000:]}
        r["seconds"] = round(time.perf_counter() - t0, 1)
        prov["runs"][name] = r
        (out / "audit_provenance.json").write_text(json.dumps(prov, indent=1) + "\n")
        print(f"{name:<12} {'ok' if r['ok'] else 'FAILED':<7} {r['seconds']:6.1f} s  "
              f"{r.get('kernel_events', r.get('records', ''))} {r.get('error', '')[:300]}", flush=True)
    return 0 if all(r["ok"] for r in prov["runs"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
