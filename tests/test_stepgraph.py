"""A decode step captured once and patched at every position (launchlab.core.stepgraph): its setting and
refusals on any machine; on a GPU, that its graph leaves the bytes the eager steps leave, across a change of
the MLA split plan, and that nothing but the position's launches changes with the position."""
import ctypes

import numpy as np
import pytest

from launchlab.core import mode, pdl, stepgraph
from launchlab.kernels import decode

live = pytest.mark.skipif(not mode.is_live(), reason="needs a GPU")


@pytest.mark.parametrize("value, expected", [(None, "once"), ("", "once"), (" every ", "every"), ("once", "once")])
def test_the_setting_defaults_to_capturing_once(monkeypatch, value, expected):
    if value is None:
        monkeypatch.delenv(stepgraph.ENV, raising=False)
    else:
        monkeypatch.setenv(stepgraph.ENV, value)
    assert stepgraph.how() == expected


@pytest.mark.parametrize("value", ["Every", "1", "onc", "once,every"])
def test_any_other_setting_is_refused_naming_both(monkeypatch, value):
    monkeypatch.setenv(stepgraph.ENV, value)
    with pytest.raises(stepgraph.StepGraphError, match="`once`.*`every`"):
        stepgraph.how()


def test_a_nodes_parameters_are_64_bit_slots_read_through_their_addresses():
    slots, ptrs = stepgraph.params_array((7, 2**40 + 3, 0xFFFFFFFF))
    base = ctypes.addressof(slots)
    assert [ptrs[i] for i in range(3)] == [base, base + 8, base + 16]
    assert [ctypes.c_uint64.from_address(ptrs[i]).value for i in range(3)] == [7, 2**40 + 3, 0xFFFFFFFF]
    slots, ptrs = stepgraph.params_array(())                # a kernel without parameters: one unused slot
    assert len(slots) == len(ptrs) == 1


def _rec(n):
    return pdl.Recorded(1, (1, 1, 1), (32, 1, 1), 0, tuple(range(n)))


@pytest.mark.parametrize("taps, per_position, match", [
    ([], [], "at least one position"),
    ([object()], [[_rec(1)], []], "position 1: 0 position-dependent launches recorded, the captured step has 1"),
    ([object()], [[_rec(1), _rec(2)]], "position 0: 2 .* has 1"),
])
def test_records_that_do_not_match_the_template_are_refused_before_the_driver(taps, per_position, match):
    with pytest.raises(stepgraph.StepGraphError, match=match):
        stepgraph.StepGraph(None, taps, per_position)


@pytest.mark.parametrize("watch", [pdl.recording, pdl.tapping])
def test_one_watch_of_a_kind_at_a_time_and_it_ends_with_its_block(watch):
    first = []
    with watch(first):
        with pytest.raises(pdl.PDLError, match="already"):
            with watch([]):
                pass
    with watch([]):                              # the first block ended: a new one may start
        pass


def test_recording_and_tapping_may_watch_together():
    with pdl.recording([]), pdl.tapping([]):
        pass


def test_a_graph_needs_positions_and_positions_inside_the_cache():
    m = decode.Model(decode.Config(layers=3), 0, 10, {}, {}, {})
    with pytest.raises(decode.DecodeError, match="at least one position"):
        m.graph([])
    for pos in (-1, 10):
        with pytest.raises(decode.DecodeError, match=f"position {pos} is outside the cache \\(capacity 10\\)"):
            m.position_launches(pos)
    m.log = []
    with pytest.raises(decode.DecodeError, match="cannot log or time"):
        m.position_launches(9)


# ------------------------------------------------------------------ on a GPU
@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _fresh(m, saved, positions):
    m.restore(saved)
    for i in m.state["mla"]:
        m.state["mla"][i][0, positions[0]:positions[-1] + 1] = 0


def _left(cp, m, positions):
    out = {"logits": cp.asnumpy(m.buf["logits"]), "token": cp.asnumpy(m.buf["token"])}
    for i, st in m.state["kda"].items():
        out[f"kda.L{i}"] = cp.asnumpy(st)
    for i, cache in m.state["mla"].items():
        out[f"mla.L{i}"] = cp.asnumpy(cache[0, positions[0]:positions[-1] + 1])
    return out


@pytest.mark.gpu
@live
@pytest.mark.parametrize("ctx, tokens", [(8189, 6), (20_000, 3)])
def test_the_patched_graph_leaves_the_bytes_of_the_eager_steps(cp, monkeypatch, ctx, tokens):
    """8,189 .. 8,194 cross SPLIT_MIN_CTX = 8,192: the split plan (grid, shared memory) changes inside the graph."""
    m = decode.build(decode.Config(layers=3), ctx=ctx, extra=tokens + 1)
    positions = list(range(ctx, ctx + tokens))
    for p in (positions[0], positions[-1]):
        m.step(p)
    cp.cuda.Device().synchronize()
    saved = m.save()
    _fresh(m, saved, positions)
    for p in positions:
        m.step(p)
    eager = _left(cp, m, positions)
    assert any(v.any() for k, v in eager.items() if k.startswith("mla."))
    for how in ("every", "once"):
        monkeypatch.setenv(stepgraph.ENV, how)
        _fresh(m, saved, positions)
        g, stream = m.graph(positions)
        assert isinstance(g, stepgraph.StepGraph) == (how == "once")
        g.launch(stream)
        stream.synchronize()
        got = _left(cp, m, positions)
        assert list(got) == list(eager)
        for k in eager:
            assert got[k].tobytes() == eager[k].tobytes(), (how, k)


@pytest.mark.gpu
@live
def test_only_the_position_launches_change_with_the_position(cp):
    m = decode.build(decode.Config(layers=3), ctx=8190, extra=4)
    m.step(8190)
    full, pos = {}, {}
    for p in (8190, 8191, 8193):
        full[p] = []
        with pdl.recording(full[p]):
            m.step(p)                       # the chain's launches are recorded (cuBLAS's still run)
        pos[p] = m.position_launches(p)
        assert len(pos[p]) == 3 * m.cfg.kinds.count("mla")
        it = iter(full[p])                  # the position's launches are the step's own, in its order
        assert all(any(r == x for x in it) for r in pos[p])
    cp.cuda.Device().synchronize()
    for a, b in ((8190, 8191), (8191, 8193)):
        assert len(full[a]) == len(full[b])
        changed = [x for x, y in zip(full[a], full[b]) if x != y]
        assert changed and all(x in pos[a] for x in changed), (a, b)
    rope = [r for r in pos[8190][0::3]]
    assert all(np.uint32(r.words[-1]) == 8190 for r in rope)           # rope_pack's last argument is pos
    grids = {p: [r.grid for r in pos[p][1::3]] for p in pos}
    assert grids[8190] == grids[8191] != grids[8193]                     # the split plan changes past 8,192
