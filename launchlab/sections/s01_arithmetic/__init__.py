"""§1 the arithmetic nobody does: bandwidth against grid and block, wave staircases, occupancy from the driver and achieved."""
