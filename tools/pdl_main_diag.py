"""Which of main's launches keeps the decode step from gaining with PDL? (a diagnostic, not a recording)

For main and for main with each decode gate set to its fixed value, an ABBA of the step with the launch path's
attribute on (A) and off (B) at the eval context: the PDL gain under each arm, in µs per token.

    python tools/pdl_main_diag.py [LAYERS]      (on a GPU; default: the full depth)
"""
import sys

from launchlab.core import gates
from launchlab.kernels import decode
from launchlab.sections.s06_one_binary import onebinary

layers = int(sys.argv[1]) if len(sys.argv) > 1 else decode.FULL_LAYERS
main, fixed = gates.preset("main"), gates.preset("fixed")
model = decode.build(decode.Config(layers=layers), ctx=onebinary.CTX, extra=onebinary.EVAL_TOKENS + 1)
arms = [("main", main)] + [(f"main + {g}={fixed[g]}", dict(main, **{g: fixed[g]})) for g in onebinary.DECODE_GATES]
arms.append(("fixed", fixed))
print(f"{'arm':<36} {'PDL on ms':>10} {'PDL off ms':>10} {'PDL saves us/token':>19} {'spread us':>9}", flush=True)
for name, arm in arms:
    ab = onebinary.abba(model, dict(arm, PDL="1"), dict(arm, PDL="0"), onebinary.EVAL_TOKENS, 2, 3, ("on", "off"))
    r = onebinary.GateRun("PDL", "1", "0", ab)
    print(f"{name:<36} {r.fixed_ms:>10.3f} {r.main_ms:>10.3f} {1e3 * r.cost_ms:>19.1f} {1e3 * r.spread_ms:>9.1f}",
          flush=True)
