"""What a learner, an instructor or a maintainer touches: the banner, the recorder, the summary, the
self-test, the benches, the exercises' checker, the explorers, the course runner, the bad-input sweep and
the grader."""
