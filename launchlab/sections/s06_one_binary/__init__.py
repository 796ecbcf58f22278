"""§6 one binary, two arms: the decode step's profile, eval and bench, ABBA per gate, the launch path."""
