"""§5: sharding plants the next occupancy bug -- the audit greps for the dimension, and the recorded tp sweep."""
from launchlab.sections.s03_starvation import kda
from launchlab.sections.s05_sharding import audit


def test_audit_finds_the_head_derived_grid_and_lists_the_rest():
    hits = audit.grep("head")
    dependent = {(s.file, s.function) for s, hit in hits if hit}
    # KDA; MLA's split and combine; and the decode step's own glue whose grid is n_head (kda_prep: the fine one)
    assert dependent == {("kernels/kda_decode.py", "step"), ("kernels/mla.py", "split"),
                         ("kernels/mla.py", "combine"), ("kernels/decode.py", "step"),
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


def test_a_grid_passed_through_launch_helpers_is_found_at_each_call(tmp_path):
    """A launch inside a helper whose grid is the helper's parameter is listed where the helper is called,
    through two levels of helpers, with the grid each call passes."""
    (tmp_path / "toy.py").write_text(
        "class M:\n"
        "    def _k(self, site, grid, args):\n"
        "        kern.launch(grid, 128, args)\n"
        "    def _ew(self, site, n, args):\n"
        "        self._k(site, (-(-n // 256),), args)\n"
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
