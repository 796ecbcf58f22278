"""The course as a website (launchlab.faces.site, make site): its pages in the lecture's order, the start page,
the staged sources; and the kept Chromium run over the built site (data/site/report.json)."""
import json

import pytest

from launchlab import sections
from launchlab.faces import glossary, page, site


def test_the_pages_are_the_lecture_s_order_start_page_first():
    ps = site.pages()
    nbs = [n[:-6] for s in sections.all() for n in s.notebooks]
    assert ps[0] == "index" and ps[1:1 + len(nbs)] == nbs and ps[-2:] == [glossary.GLOSSARY.stem, "running-live"]
    assert nbs[:3] == ["00_start_here", "01_the_arithmetic", "02a_the_width_was_wrong"] and len(set(ps)) == len(ps)


def test_the_start_page_lists_every_page_and_links_decks_as_files():
    text = site.index_page(["01_the_arithmetic.slides.html"])
    toc = text.split("```{toctree}")[1].split("```")[0]
    assert [ln for ln in toc.splitlines() if ln and not ln.startswith(":")] == site.pages()[1:]
    assert '<a href="decks/01_the_arithmetic.slides.html">01_the_arithmetic</a>' in text      # raw: not a doc
    assert "slide decks" not in site.index_page([])                                           # none built: no list


def test_staging_copies_every_page_and_refuses_a_missing_one(tmp_path, monkeypatch):
    out = site.stage(tmp_path / "src")
    for name in site.pages():
        assert (out / f"{name}.ipynb").exists() or (out / f"{name}.md").exists(), name
    assert (out / "conf.py").exists() and (out / "extra" / "decks").is_dir()
    monkeypatch.setattr(site, "pages", lambda: ["index", "no_such_page"])
    with pytest.raises(site.SiteError, match="no page for 'no_such_page'"):
        site.stage(tmp_path / "src2")


def test_the_site_config_loads_nothing_from_a_cdn():
    conf = (site.SRC / "conf.py").read_text()
    assert 'nb_execution_mode = "off"' in conf and "nb_ipywidgets_js = {}" in conf
    assert "myst_enable_extensions = []" in conf          # no dollarmath: MathJax would come from a CDN
    assert '"application/vnd.jupyter.widget-view+json", None' in conf


@pytest.mark.reports
def test_the_kept_site_report_is_a_clean_run_over_every_page():
    r = json.loads(page.SITE_REPORT.read_text())
    assert r["pages"] == r["expected_pages"] == r["pages_opened"] == r["pages_ok"] == len(site.pages())
    assert r["external_requests"] == 0 and r["broken_links"] == 0 and r["console_errors"] == 0
    assert r["figures"] == r["figures_decoded"] >= 30 and r["internal_links_checked"] > 500
    assert r["search_hits_for_occupancy"] > 0 and r["decks"] == 10
    h = page.headline()
    assert h["site_pages"] == h["site_pages_opened_in_chromium"] == r["pages"]
    assert h["site_external_requests"] == 0 and h["site_broken_links"] == 0


def test_the_reading_figures_as_issue_41_asks():
    h = page.headline()
    assert set(h) == {"glossary_terms", "terms_used_before_defined", "widest_output_line", "longest_listing_lines",
                      "site_pages", "site_pages_opened_in_chromium", "site_external_requests", "site_broken_links"}
    assert h["terms_used_before_defined"] == 0 and h["widest_output_line"] <= 110
    assert h["longest_listing_lines"] <= 40 and h["glossary_terms"] >= 30
