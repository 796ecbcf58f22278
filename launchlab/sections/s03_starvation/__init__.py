"""§3 starvation vs contention: the KDA decode step, its floor, its ratio, and a real contention run."""
