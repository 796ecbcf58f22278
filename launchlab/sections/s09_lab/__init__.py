"""The lab: the 8-step launch-geometry audit of the decode step under main."""
