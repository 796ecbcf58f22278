"""§7 proving bit-identity as bytes: dumps compared with cmp, and the FMA trap."""
