"""The self-check: the lecture's nine questions, answered in the notebook, with feedback."""
