"""Validate deploy/z2jh/values.yaml against the jupyterhub Helm chart's own values schema, as Helm does: the
chart's default values with ours merged over them.

    python tools/check_z2jh_values.py PATH/TO/zero-to-jupyterhub-k8s/jupyterhub

The chart (github.com/jupyterhub/zero-to-jupyterhub-k8s: jupyterhub/values.yaml and values.schema.yaml) is not
vendored here, so this runs where a checkout of it is at hand (deploy/README.md records the last run).
"""
import sys
from pathlib import Path

import jsonschema
import yaml

ROOT = Path(__file__).resolve().parent.parent


def merged(base, over):
    if isinstance(base, dict) and isinstance(over, dict):
        return {k: merged(base.get(k), over[k]) if k in over else base[k] for k in {*base, *over}}
    return over


chart = Path(sys.argv[1])
schema = yaml.safe_load((chart / "values.schema.yaml").read_text())
values = merged(yaml.safe_load((chart / "values.yaml").read_text()),
                yaml.safe_load((ROOT / "deploy" / "z2jh" / "values.yaml").read_text()))
errors = sorted(jsonschema.Draft7Validator(schema).iter_errors(values), key=lambda e: list(e.path))
for e in errors:
    print(f"{'.'.join(map(str, e.path)) or '(top)'}: {e.message}")
print(f"deploy/z2jh/values.yaml over {chart}/values.yaml, against its values.schema.yaml: {len(errors)} error(s)")
sys.exit(1 if errors else 0)
