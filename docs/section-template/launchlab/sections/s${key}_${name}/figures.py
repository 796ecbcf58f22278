"""${title}: the section's figure."""
from __future__ import annotations

import matplotlib.pyplot as plt


def blocks_per_sm(r):
    """Resident blocks per SM against block size, from the compiled kernel's resources."""
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.bar([str(b) for b in r.blocks], r.blocks_per_sm, color="#1b9e77")
    ax.set_xlabel("threads per block")
    ax.set_ylabel("resident blocks per SM")
    ax.set_title(f"${family}_scale: {r.registers} registers per thread")
    fig.tight_layout()
    return fig
