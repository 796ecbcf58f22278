"""§5: sharding plants the next occupancy bug -- the audit greps for the dimension, and the recorded tp sweep."""
import pytest

from launchlab.sections.s03_starvation import kda
from launchlab.sections.s05_sharding import audit


def test_audit_finds_the_head_derived_grid_and_lists_the_rest():
    hits = audit.grep("head")
    dependent = {(s.file, s.function) for s, hit in hits if hit}
    # KDA; MLA's split and combine; and the decode step's own glue whose grid is n_head (kda_prep: the fine one)
    assert dependent == {("kernels/kda_decode.py", "step"), ("kernels/mla.py", "split"),
                         ("kernels/mla.py", "combine"), ("kernels/decode.py", "step"),
                         ("kernels/decode.py", "_attend"),             # the rope pack: grid = MLA heads + 1
                         ("kernels/kda_contrast.py", "step")}          # 03a's contrast: grid = n_head by design
    prep = [s for s, hit in hits if hit and s.file == "kernels/decode.py" and "kda_heads" in s.grid]
    assert len(prep) == 1
    assert len(hits) >= 8 and {s.file for s, _ in hits} >= {"kernels/stream_read.py", "kernels/rms_norm.py", "kernels/waves.py",
                                                  "kernels/kda_decode.py"}
    assert any(f == "kda_decode.cu" and "blockIdx.y" in t for f, _, t in audit.kernel_axes())


def test_a_grid_that_mentions_the_dimension_through_a_plan_is_found(tmp_path):
    """The audit follows a grid back through assignments and a Plan's properties, not only literal names."""
    (tmp_path / "toy.py").write_text(
        "class Plan:\n"
        "    def grid(self):\n"
        "        return (4, self.n_head)\n"
        "def go(k, p):\n"
        "    g = p.grid\n"
        "    k.launch(g, 128, ())\n"
        "def other(k):\n"
        "    k.launch(132, 256, ())\n")
    hits = {s.function: hit for s, hit in audit.grep("head", tmp_path)}
    assert hits == {"go": True, "other": False}


def test_headline_figures():
    h = audit.headline(kda.recorded())
    assert h["kda_main_blocks_tp1"] == 96 and h["kda_main_blocks_tp8"] == 12
    assert h["audit_sites_grid_from_head"] == 9 and h["audit_launch_sites"] >= 9   # KDA, contrast, MLA x 2, decode x 5
    assert h["kda_main_cold_tbs_tp8"] < h["kda_main_cold_tbs_tp1"] / 5
    assert h["kda_main_cold_us_tp8"] > 0.8 * h["kda_main_cold_us_tp1"]      # 1/8 of the work, about the same time


# a toy module's two launch helpers, as the decode step has them: _k(site, grid) launches, _ew(site, n) calls _k
TOY_HELPERS = ("class M:\n"
               "    def _k(self, site, grid, args):\n"
               "        kern.launch(grid, 128, args)\n"
               "    def _ew(self, site, n, args):\n"
               "        self._k(site, (-(-n // 256),), args)\n")


def test_a_grid_passed_through_launch_helpers_is_found_at_each_call(tmp_path):
    """A launch inside a helper whose grid is the helper's parameter is listed where the helper is called,
    through two levels of helpers, with the grid each call passes."""
    (tmp_path / "toy.py").write_text(
        TOY_HELPERS +
        "    def step(self, c):\n"
        "        self._k('prep', (c.n_head,), ())\n"
        "        H = c.hidden\n"
        "        self._ew('add', H, ())\n")
    hits = sorted((s.function, s.grid, hit) for s, hit in audit.grep("head", tmp_path))
    assert hits == [("step", "(c.n_head,)", True), ("step", "H", False)]


def test_the_report_lists_the_course_s_own_sites_and_counts_the_harness():
    own = audit.report("head")
    assert "kernels/kda_decode.py step()" in own and "checks.py" not in own and "core/timing.py" not in own
    assert "launches of the instruments and self-checks" in own
    every = audit.report("head", harness=True)
    assert "core/timing.py spin()" in every and "sections/s01_arithmetic/checks.py" in every
    assert all(s.harness for s, _ in audit.grep("head") if s.function.startswith("check"))


def test_a_helper_s_site_label_names_the_launch_s_role(tmp_path):
    """The label a launch helper is given (f"L{i}.prep", "add") is kept on the site, its layer stripped."""
    (tmp_path / "toy.py").write_text(
        TOY_HELPERS +
        "    def step(self, c):\n"
        "        for i in range(3):\n"
        "            self._k(f'L{i}.kda.prep', (c.n_head,), ())\n"
        "        self._ew('add', c.hidden, ())\n")
    got = sorted((s.site, s.role) for s in audit.sites(tmp_path))
    assert got == [("L{i}.kda.prep", "kda.prep"), ("add", "add")]


def _profile():
    from launchlab.sections.s06_one_binary import onebinary
    return onebinary.recorded().profiles[f"main {onebinary.CTX}"]


def test_the_step_s_head_derived_launches_joined_with_the_profile():
    """Worked by hand from the step's code: at tp = 8 the KDA step has n_head = 12 blocks (main: one block
    per head), kda_prep 12, the RoPE packing 16 + 1 = 17, the MLA combine 16 heads x 16 column tiles = 256,
    and the MLA split 129 (the step's 131,073rd token: one more 64-token tile than 128 splits of 1,024);
    among them only kda.step both starves (under 66 of 132 SMs) and costs more than 4 of the step's cheapest
    launch."""
    rows = {r.role: r for r in audit.in_step("head", _profile())}
    assert {"kda.step", "kda.prep", "mla.rope_pack", "mla.combine", "mla.split", "kda.o_bf16", "mla.o_bf16",
            "mla.v_bf16"} == set(rows)
    assert (rows["kda.step"].blocks, rows["kda.prep"].blocks, rows["mla.rope_pack"].blocks) == (12, 12, 17)
    assert rows["mla.combine"].blocks == 256 and rows["mla.split"].blocks == 129
    assert rows["kda.step"].sms_pct == pytest.approx(100 * 12 / 132)
    assert rows["mla.combine"].sms_pct == 100                         # capped: 256 blocks cover all 132 SMs
    starved_and_slow = [r.role for r in rows.values() if r.starved and r.over_cheapest > 4]
    assert starved_and_slow == ["kda.step"]
    assert not rows["mla.split"].starved and rows["kda.prep"].starved
    # issue 41: by wave fill the split is half empty -- 2 blocks of 176 registers x 128 threads and 96,000 B fit an
    # SM (registers: 65,536 / (176 x 128) = 2.9; shared memory: 233,472 / 97,024 = 2.4), so 129 / (2 x 132) = 48.9 %;
    # the combine holds 4 an SM: 256 / (4 x 132) = 48.5 %; kda.step 16 an SM: 12 / (16 x 132) = 0.57 %
    assert rows["mla.split"].fill_pct == pytest.approx(100 * 129 / 264)
    assert rows["mla.combine"].fill_pct == pytest.approx(100 * 256 / 528)
    assert rows["kda.step"].fill_pct == pytest.approx(100 * 12 / (16 * 132))
    assert rows["mla.split"].half_empty and not rows["mla.split"].starved
    table = audit.in_step_table(list(rows.values()), _profile().step_us)
    split_line = next(line for line in table.splitlines() if line.startswith("mla.split"))
    assert " 98% " in split_line and " 49% " in split_line and split_line.endswith("wave half empty")


def test_the_shape_derived_norm_grid_is_what_the_grep_misses():
    p = _profile()
    rows = audit.in_step("head", p)
    assert audit.missed(rows, p, {"KDA heads": 12, "MLA heads": 16}) == [("kda.o_norm", 12, "KDA heads")]
    inter = audit.in_step("inter", p)
    assert [(r.role, r.blocks) for r in inter] == [("mlp.silu_mul", 9)]      # ceil(2304 / 256)


def test_a_step_launch_the_profile_does_not_time_is_an_error():
    from dataclasses import replace
    p = _profile()
    cut = replace(p, rows=[r for r in p.rows if r.role != "kda.prep"])
    with pytest.raises(ValueError, match="kda.prep"):
        audit.in_step("head", cut)


def test_the_slices_figure_draws_one_floor_per_byte_count_and_names_its_arms():
    """Issue 41: the floors were drawn in the arms' colours with a legend that did not match them (main's and the
    fix's floor lines labelled alike, the tuned one unlabelled). Arms that move the same bytes share one floor
    line: main stores the intermediate (3.18 MB), the fix and the tuned kernel do not (2.39 MB)."""
    import matplotlib
    matplotlib.use("Agg")
    from launchlab.sections.s03_starvation import smaller_gpus
    from launchlab.sections.s05_sharding import figures
    fig = figures.kda_on_slices(smaller_gpus.recorded())
    labels = [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    assert [lb for lb in labels if lb.startswith("floor")] == ["floor of 3.18 MB on the slice (main)",
                                                               "floor of 2.39 MB on the slice (fix, tuned)"]
