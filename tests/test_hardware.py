from launchlab.core import hardware
from launchlab.sections.s00_start import instruments


def test_h200_constants_match_the_recorded_device():
    recorded = instruments.recorded().spec
    assert recorded == hardware.H200, "launchlab.core.hardware.H200 differs from cudaGetDeviceProperties on the H200"
    assert recorded.sm_count == 132 and recorded.compute_capability == (9, 0)


def test_spec_lookup_and_roundtrip():
    assert hardware.spec("H200") is hardware.H200
    assert hardware.GPUSpec.from_dict(hardware.H200.to_dict()) == hardware.H200
    import pytest
    with pytest.raises(ValueError, match="unknown GPU"):
        hardware.spec("H300")
