"""${title}."""
