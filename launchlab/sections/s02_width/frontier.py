"""§2.2: a win is measured against a state, not for all time.

A significance gate scores a change only if it beats the current frontier (main) by more than a fixed
fraction of its tok/s (2% in the lecture's ladder). A change that saves a fixed amount of time per token is a
fixed number of milliseconds; as main gets faster underneath it, the same milliseconds become a larger
fraction of the token -- so a real, correct win can score none for rounds and then clear the gate with no code
change, once the frontier has moved.
"""
from __future__ import annotations

from dataclasses import dataclass

GATE = 0.02

# Lecture §2.2: PR #71 measured three times against the frontier of its day.
ROUNDS = ((1, 16.25, 0.012), (2, 17.53, 0.004), (3, 26.57, 0.018))   # (round, branch tok/s, over frontier)
ROUND_ACCURACY = ((1.0, 0.0065), (1.0, 0.0035), (1.0, 0.0026))       # the same rounds' (top-1, KL)


@dataclass(frozen=True)
class Round:
    round: int
    branch_tok_s: float
    over_frontier: float

    @property
    def main_tok_s(self) -> float:
        """The frontier's tok/s implied by the branch's tok/s and its margin over it."""
        return self.branch_tok_s / (1 + self.over_frontier)

    @property
    def saving_ms_per_token(self) -> float:
        """The absolute time the branch saved per token in that round."""
        return 1000 / self.main_tok_s - 1000 / self.branch_tok_s

    @property
    def scores(self) -> bool:
        return self.over_frontier > GATE


def lecture_rounds() -> list[Round]:
    return [Round(*r) for r in ROUNDS]


def gain(main_ms_per_token: float, saving_ms: float) -> float:
    """Fractional tok/s gain of saving `saving_ms` per token on a main taking `main_ms_per_token`."""
    if saving_ms >= main_ms_per_token or main_ms_per_token <= 0:
        raise ValueError("the saving must be smaller than the time per token")
    return main_ms_per_token / (main_ms_per_token - saving_ms) - 1


def clears_gate_below(saving_ms: float, gate: float = GATE) -> float:
    """The main time per token (ms) below which a fixed saving clears the gate: gain(t, s) > gate."""
    return saving_ms * (1 + gate) / gate


def norm_saving_ms(us_before: float, us_after: float, norms_per_token: int = 327) -> float:
    """Per-token saving of a faster norm, from per-launch times (us) and the launches per token."""
    return (us_before - us_after) * norms_per_token / 1000
