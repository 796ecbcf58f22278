"""§5: sharding plants the next occupancy bug -- the audit greps for the dimension, and the recorded tp sweep."""
from launchlab import audit, kda


def test_audit_finds_the_head_derived_grid_and_lists_the_rest():
    hits = audit.grep("head")
    dependent = {(s.file, s.function) for s, hit in hits if hit}
    assert dependent == {("kda.py", "step"), ("mla.py", "__call__")}    # KDA, and MLA: split and combine
    assert len(hits) >= 8 and {s.file for s, _ in hits} >= {"bandwidth.py", "rmsnorm.py", "waves.py", "kda.py"}
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
    assert h["audit_sites_grid_from_head"] == 3 and h["audit_launch_sites"] >= 8
    assert h["kda_main_cold_tbs_tp8"] < h["kda_main_cold_tbs_tp1"] / 5
    assert h["kda_main_cold_us_tp8"] > 0.8 * h["kda_main_cold_us_tp1"]      # 1/8 of the work, about the same time
