"""00, start here: the GPU's properties, the timing instruments, and what this machine has."""
