"""The kernels' host code: one module per family of kernels/*.cu (its gates, geometry, launch and numpy
reference), and the decode step built from them. Imports only core; no section, no lesson code."""
