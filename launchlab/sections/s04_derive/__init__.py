"""§4 derive the constant: the MLA split count from the shape and a named target."""
