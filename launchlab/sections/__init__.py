"""One folder per lecture section: each holds the lesson modules that section owns (their doors,
measurements and headline figures)."""
