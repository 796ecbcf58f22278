"""§2's bad inputs (launchlab.core.badinput): refused with the fix named, the same call working right after."""
import numpy as np

from launchlab.core.badinput import Case
from launchlab.sections.s02_width import accuracy

CASES = (
    Case("accuracy", "logits of one position without the positions axis",
         lambda: accuracy.agreement([0], np.zeros(5, np.float32), np.zeros(5, np.float32)), ValueError,
         r"\(positions, vocab\)", lambda: accuracy.agreement([0], np.zeros((1, 5)), np.zeros((1, 5))).kl == [0.0]),
)
