# The course's website (issue 41): `make site` copies this file, the pages beside it and the committed notebooks
# into build/site-src and runs Sphinx over them (launchlab.faces.site). Nothing is fetched at build or read time:
# the notebooks are not executed (their committed replay outputs are the page), the theme ships its assets, and
# no extension that loads a script from a CDN is on.
project = "Launch Geometry: Grids, Occupancy, and 327 Norms per Token"
author = "the launchlab course"
extensions = ["myst_nb"]
html_theme = "sphinx_book_theme"
html_title = "Launch Geometry"
html_theme_options = {
    "show_toc_level": 2,
    "use_download_button": False,
    "use_fullscreen_button": False,
    "use_repository_button": False,
    "navigation_with_keys": False,
}
html_extra_path = ["extra"]            # extra/decks/: the static reveal.js decks of `make slides`, linked from the start page
html_last_updated_fmt = None
html_context = {"default_mode": "light"}    # the theme's light/dark switch starts from a mode, not an empty one
html_copy_source = False
exclude_patterns = ["_build", "extra"]

nb_execution_mode = "off"              # the committed replay outputs, as nbval compares them
# an explorer's widget view needs the JupyterLab widget manager, loaded from a CDN on a web page: the page shows
# its static preview (the PNG every explorer carries) instead
nb_mime_priority_overrides = [("html", "application/vnd.jupyter.widget-view+json", None)]
nb_ipywidgets_js = {}
nb_render_markdown_format = "myst"     # a markdown output's links to other notebooks (00's course map) resolve too
myst_enable_extensions = []            # no dollar math: the notebooks' $ are prices and shell, and MathJax is a CDN
myst_heading_anchors = 3


# a heading's anchor as JupyterLab writes it (the text, spaces as hyphens), so the notebooks' links to
# `glossary.ipynb#wave-fill` work in JupyterLab and on the website alike (by name: Sphinx pickles its settings)
myst_heading_slug_func = "launchlab.faces.glossary.anchor_of"
suppress_warnings = ["mystnb.unknown_mime_type", "myst.header"]
