"""§2 the barrier was right; the width was wrong: the RMS norm widened, byte-identity, the moving frontier."""
