"""§11 audit a real model: the lab's audit pointed at transformers decode steps nobody here wrote (issue 40)."""
