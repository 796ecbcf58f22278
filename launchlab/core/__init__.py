"""The machinery every section shares: live or replay (mode, door), the GPU's limits, occupancy, checked
launches, the kernel sources and their compilers, timing, timelines, gates, recordings and dumps."""
