"""Live only: every kernel against its numpy reference on the GPU, one parametrized test per named check
(the same checks `python -m launchlab selftest` runs in one process, under compute-sanitizer)."""
import pytest

from launchlab.faces import selftest


@pytest.mark.gpu
@pytest.mark.parametrize("check", selftest.CHECKS, ids=[c.id for c in selftest.CHECKS])
def test_kernel(check):
    check.run()


def test_check_ids_are_unique_and_grouped_by_section():
    ids = [c.id for c in selftest.CHECKS]
    assert len(ids) == len(set(ids))
    assert {c.section for c in selftest.CHECKS} == {"01", "02", "03", "04", "08"}
