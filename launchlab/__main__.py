"""python -m launchlab <command>

  env                        mode, banner, toolchain
  gates                      every LAUNCHLAB_* gate, its value now, and the restore set
  compile [--sass]           compile every kernel offline with NVRTC (no GPU) and print its resources
  refusals [--write] [--only NB]  each your-turn cell and the lab's plan written wrong, run in a notebook: the
                             refusal box and its lines (--write: data/reading/refusals.json)
  archs [--only ARCH] [--write]  every kernel built for sm_70 ... sm_120 (entry points, SASS) and the
                             calculator's limits against NVIDIA's table (--write: data/archs/report.json)
  show FAMILY EXPR [--block N]  the CUDA source of one kernel variant, its registers and shared memory
  record [NAME ...] [--out DIR]  on a GPU: measure every section's door and write the recordings
                             (every recording the registered sections' doors name, or the ones given)
  check-recordings           load every recording (fails on missing, corrupt or stale ones)
  summary [--json]           every section's headline figures, read from the recordings
  cmp A B                    compare two dumps byte for byte (exit 0 identical, 1 different, 2 unreadable)
  badinputs [--docs]         every bad input the reliability sweep knows, refused with the fix named (GPU ones live)
  selftest                   every kernel against its numpy reference, small inputs (live; one process,
                             so compute-sanitizer can run it whole)
  bench [stream|rms|kda|mla|decode|pdl|host ...] ratios measured side by side in one run, ABBA where two arms compete (live)
  grade DIR [--out D] [--jobs N]  grade a folder of lab submissions (otter-grader) into grades.csv + feedback
  grade --benchmark N        grade N made-up submissions, timed: data/grading/report.json
  assign [--check]           regenerate notebooks/09 from lab_solutions/ with otter assign (--check: drift only)
  course [--out DIR]         execute every notebook headless into HTML
  course --refresh [NAME ...]  re-execute notebooks in place in replay: the outputs that are committed
  release [--out DIR]        the learners' release: the course without solutions, hidden tests or reference answers
  reading                    what a learner reads: minutes per notebook, quantities printed with two values,
                             exercises whose answer shows above them (exit 1 if any, or a notebook over 40 min)
  page                       what the committed outputs put on the screen: lines over 110 characters, listings
                             over 40 lines (exit 1 if any)
  glossary [--write]         the glossary's terms, every first use in a notebook not linked to it (exit 1 if any);
                             --write: notebooks/glossary.ipynb and the links
  site [--stage]             the course as a website in build/site/ (Sphinx + MyST-NB + sphinx-book-theme, offline)
  sections [--readme]        the registered sections, as the course's map (--readme: write it into README.md)
  new-section KEY NAME TITLE [--family F]  a new section from the template (docs/adding-a-section.md)
  slides [NAME ...] [--out DIR]  the section notebooks 01-08 as static reveal.js decks (reveal.js from npm)
  slides --notes [NAME ...]  each deck's cue sheet: titles, what to say and point at, the room's questions with their answers, explorer moves, minutes
  audit --trace FILE [--steps N] [--mark NAME] [--device N] [--by sms|wave] [--top N] [--csv F] [--json F] [--figure F]
                             the lab's audit of any program's launches, read from a torch.profiler trace or a
                             CUPTI record; audit [--tool cupti|torch] -- python my_step.py ...: run it under
                             the profiler first (on a GPU; --save F keeps the record; --floors N: step 4
                             for the top N under Nsight Compute: DRAM bytes, floor, cold time, verdict);
                             audit --grep PATH [--dimension head]: step 8 over any source tree

The CLI imports a command's modules only when that command runs (the one place the package imports
inside functions), so `gates` or `summary` never load matplotlib or CuPy.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def _env(_args) -> int:
    from launchlab.core import compiler, sass
    from launchlab.faces.banner import banner
    print(banner())
    print(f"NVRTC (offline): {'.'.join(map(str, compiler.nvrtc_version()))}")
    print(f"cuobjdump: {sass.tool('cuobjdump')}\nnvdisasm:  {sass.tool('nvdisasm')}")
    return 0


def _gates(_args) -> int:
    from launchlab.core import gates
    print(gates.table())
    print("\nrestore set (every gate to its baseline arm; the `main` preset, main's flaws restored):\n  "
          + gates.restore_set())
    print("in Python: `with gates.setting(**gates.preset('main')): ...` (or 'fixed': every default)")
    return 0


def _compile(args) -> int:
    from launchlab import sections
    from launchlab.core import compiler, sources
    sections.all()                  # the kernel families sections declare, beside the course's own
    for fam in sources.all_families():
        b = compiler.compile_offline(fam)
        print(f"kernels/{fam}.cu  ->  {b.arch} cubin, {len(b.cubin)} bytes (NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]})")
        for e, low in b.lowered.items():
            r = b.resources[low]
            print(f"  {e:<32} {r.registers:>4} regs  {r.smem_static:>6} B smem  {r.stack_frame:>5} B stack  "
                  f"spills {r.spill_stores}/{r.spill_loads} B")
        if args.sass:
            print(b.sass())
    return 0


def _archs(args) -> int:
    from launchlab.faces import archs
    return archs.main(write=args.write, only=args.only)


def _refusals(args) -> int:
    from launchlab.faces import refusals
    return refusals.main(write_report=args.write, names=args.only)


def _show(args) -> int:
    from launchlab.core import listing
    print(listing.show(args.family, args.expr, block=args.block))
    return 0


def _record(args) -> int:
    from launchlab.faces import recorder, summary
    names = args.names or list(recorder.SECTIONS)
    recorder.record(names, args.out)
    if set(names) == set(recorder.SECTIONS):
        print(summary.table(args.out))
    return 0


def _check(_args) -> int:
    from launchlab.core import recordings
    ok = True
    for name in recordings.available():
        try:
            r = recordings.load(name)
            print(f"ok     {r.describe()}")
        except recordings.RecordingError as e:
            ok = False
            print(f"FAILED {e}")
    return 0 if ok else 1


def _summary(args) -> int:
    from launchlab.core import recordings
    from launchlab.faces import summary
    try:
        print(summary.as_json(args.data) if args.json else summary.table(args.data))
    except recordings.RecordingError as e:
        print(f"summary: {e}", file=sys.stderr)
        return 1
    return 0


def _badinputs(args) -> int:
    from launchlab.faces import badinputs
    return badinputs.main(["--docs"] if args.docs else [])


def _cmp(args) -> int:
    from launchlab.core import dumps
    try:
        c = dumps.cmp(args.a, args.b)
    except dumps.DumpError as e:
        print(f"cmp: {e}", file=sys.stderr)
        return 2
    print(c.describe())
    return 0 if c.identical else 1


def _assign(args) -> int:
    from launchlab.faces import grading
    if args.check:
        d = grading.drift()
        print("\n".join(d) if d else f"{grading.LEARNER.name} is what otter assign makes of the master")
        return 1 if d else 0
    print(grading.refresh_learner())
    return 0


def _selftest(_args) -> int:
    from launchlab.faces import selftest
    return selftest.main()


def _bench(args) -> int:
    from launchlab.faces import bench
    return bench.main(args.what)


def _course(args) -> int:
    from launchlab.faces import course
    return course.refresh(args.names) if args.refresh else course.build(args.out)


def _release(args) -> int:
    from launchlab.faces import release
    return release.main(Path(args.out), Path(args.report) if args.report else release.REPORT)


def _reading(args) -> int:
    from launchlab.faces import reading
    return reading.main()


def _page(args) -> int:
    from launchlab.faces import page
    return page.main()


def _site(args) -> int:
    from launchlab.faces import site
    return site.main(["--stage"] if args.stage else [])


def _glossary(args) -> int:
    from launchlab.faces import glossary
    return glossary.main(["--write"] if args.write else [])


def _sections(args) -> int:
    from launchlab import sections
    from launchlab.faces import template
    if args.readme:
        template.README.write_text(template.readme_with_map(template.README.read_text(),
                                                            sections.course_map("notebooks/")))
        print(f"wrote the map of {len(sections.all())} sections into {template.README.name}")
    else:
        print(sections.course_map("notebooks/"))
    return 0


def _slides(args) -> int:
    from launchlab.faces import cuesheet, presenter, slides
    if args.notes:
        decks = [p for p in presenter.decks() if not args.names or any(n in p.name for n in args.names)]
        if not decks:
            print(f"no deck's name contains {' or '.join(args.names)}", file=sys.stderr)
            return 2
        for p in decks:
            print(cuesheet.sheet(p) + "\n")
        return 0
    for p in slides.write(Path(args.out), args.names or None):
        print(p)
    return 0


def _new_section(args) -> int:
    from launchlab.core import paths
    from launchlab.faces import template
    try:
        made = template.instantiate(paths.ROOT, args.key, args.name, args.title, args.family)
    except ValueError as e:                  # refused before anything is written
        print(f"python -m launchlab new-section: {e}", file=sys.stderr)
        return 2
    for p in made:
        print(f"wrote {p.relative_to(paths.ROOT)}")
    print("next: write the lesson, record it on a GPU (python -m launchlab record section" + args.key + "), "
          "run its notebook, commit")
    return 0


def _audit(args) -> int:
    from launchlab import audit
    from launchlab.audit import profilers
    command = [a for a in args.command if a != "--"] if args.command else []
    if args.grep:
        from launchlab.audit import sites
        try:
            if command or args.trace:
                raise sites.SitesError("--grep reads a source tree; give it without --trace or a program")
            sites.mentions(args.dimension, ())
            scanned = sites.scan(args.grep)
            print(sites.report(args.grep, args.dimension, scanned=scanned))
            if args.json:
                Path(args.json).write_text(sites.to_json(args.grep, args.dimension, scanned) + "\n")
                print(f"wrote {args.json}")
        except sites.SitesError as e:
            print(f"python -m launchlab audit: {e}", file=sys.stderr)
            return 2
        return 0
    try:
        if bool(command) == bool(args.trace):
            raise audit.AuditError("give a record (--trace FILE) or a program to run (-- python my_step.py ...), "
                                   "one of the two")
        if args.floors < 0:
            raise audit.AuditError(f"--floors takes how many offenders step 4 measures (1 or more), got {args.floors}")
        if args.floors and not command:
            raise audit.AuditError("--floors runs the program under ncu: give it one (-- python my_step.py), not a "
                                   "record")
        if args.top < 1:
            raise audit.AuditError(f"--top takes how many rows to show (1 or more), got {args.top}")
        if (args.mark is not None or args.device is not None) and not args.trace:
            raise audit.AuditError("--mark and --device read a record: give it with --trace FILE")
        trace = (audit.load(args.trace, args.steps, args.mark, args.device) if args.trace
                 else profilers.run_script(command, args.tool, save=args.save))
        rows = audit.table(trace)
    except audit.AuditError as e:
        print(f"python -m launchlab audit: {e}", file=sys.stderr)
        return 2
    print(audit.text(trace, rows, top=args.top, by=args.by))
    if args.floors:
        from launchlab.audit import floors
        ref = floors.reference()
        off = floors.offenders(rows, args.floors, args.by)
        print(f"\nstep 4 for the top {len(off)}: ncu on the program, floor = bytes ÷ {ref.copy_tbs:.2f} TB/s "
              f"(the copy ceiling, measured now) + {floors.duration(ref.launch_us)} (a launch in a graph); times cold")
        argv = command if Path(command[0]).name.startswith("python") else [sys.executable, *command]
        for f in floors.measure(argv, off, ref.copy_tbs, ref.launch_us, others=rows):
            print("  " + f.line())
    if args.csv:
        Path(args.csv).write_text(audit.to_csv(rows))
        print(f"wrote {args.csv}")
    if args.json:
        Path(args.json).write_text(audit.to_json(trace, rows) + "\n")
        print(f"wrote {args.json}")
    if args.figure:
        import matplotlib
        matplotlib.use("Agg")
        from launchlab.audit import figure
        figure.idle_bars(trace, rows, top=args.top, by=args.by, title=Path(args.trace or command[-1]).name
                         ).savefig(args.figure)
        print(f"wrote {args.figure}")
    return 0


def parser() -> argparse.ArgumentParser:
    """The CLI's parser: every subcommand (tests/test_cli.py runs each one)."""
    p = argparse.ArgumentParser(prog="python -m launchlab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("env").set_defaults(fn=_env)
    sub.add_parser("gates").set_defaults(fn=_gates)
    c = sub.add_parser("compile")
    c.add_argument("--sass", action="store_true")
    c.set_defaults(fn=_compile)
    ar = sub.add_parser("archs", help="every kernel built for every architecture the course targets (no GPU)")
    ar.add_argument("--write", action="store_true", help="also write data/archs/report.json")
    ar.add_argument("--only", action="append", default=None, help="build only this architecture (and sm_90)")
    ar.set_defaults(fn=_archs)
    rf = sub.add_parser("refusals", help="every your-turn cell and the lab's plan written wrong, run in a notebook "
                                         "(replay): what the learner sees, in lines")
    rf.add_argument("--write", action="store_true", help="also write data/reading/refusals.json (the summary's "
                                                         "hands.refusal_lines_max)")
    rf.add_argument("--only", action="append", default=None, help="only the notebooks whose name holds this")
    rf.set_defaults(fn=_refusals)
    sh = sub.add_parser("show", help="the CUDA source of one kernel variant")
    sh.add_argument("family")
    sh.add_argument("expr")
    sh.add_argument("--block", type=int, default=None, help="also give the occupancy at this block size")
    sh.set_defaults(fn=_show)
    r = sub.add_parser("record")
    r.add_argument("names", nargs="*")
    r.add_argument("--out", default=None, help="directory for the recordings (default data/recordings)")
    r.set_defaults(fn=_record)
    sub.add_parser("check-recordings").set_defaults(fn=_check)
    su = sub.add_parser("summary")
    su.add_argument("--json", action="store_true", help="one JSON object: {section: {figure: value}}")
    su.add_argument("--data", default=None, help="read the recordings from this folder")
    su.set_defaults(fn=_summary)
    cm = sub.add_parser("cmp", help="compare two dumps byte for byte")
    cm.add_argument("a")
    cm.add_argument("b")
    cm.set_defaults(fn=_cmp)
    bi = sub.add_parser("badinputs", help="bad inputs refused with the fix named")
    bi.add_argument("--docs", action="store_true", help="also write docs/bad_inputs.md")
    bi.set_defaults(fn=_badinputs)
    sub.add_parser("selftest").set_defaults(fn=_selftest)
    sub.add_parser("grade", help="grade lab submissions (see: python -m launchlab grade --help)")
    asg = sub.add_parser("assign")
    asg.add_argument("--check", action="store_true", help="only report drift between notebooks/09 and the master")
    asg.set_defaults(fn=_assign)
    b = sub.add_parser("bench")
    b.add_argument("what", nargs="*", default=[], help="benchmarks the sections offer (an unknown name lists them)")
    b.set_defaults(fn=_bench)
    co = sub.add_parser("course")
    co.add_argument("--out", default="build/course")
    co.add_argument("--refresh", action="store_true", help="re-execute notebooks in place (replay) instead")
    co.add_argument("names", nargs="*", help="with --refresh: only notebooks whose name contains one of these")
    co.set_defaults(fn=_course)
    rl = sub.add_parser("release", help="the learners' release (no solutions, hidden tests or reference answers)")
    rl.add_argument("--out", default="build/learner")
    rl.add_argument("--report", default=None, help="where the leak report goes (default data/release/report.json)")
    rl.set_defaults(fn=_release)
    sub.add_parser("reading", help="what a learner reads: pacing, quantities, answers above").set_defaults(fn=_reading)
    sub.add_parser("page", help="what the outputs put on the screen: lines over 110 characters, listings over 40 "
                   "lines").set_defaults(fn=_page)
    g = sub.add_parser("glossary", help="the glossary's terms and every first use not linked to it")
    g.add_argument("--write", action="store_true", help="write notebooks/glossary.ipynb and link every first use")
    g.set_defaults(fn=_glossary)
    st = sub.add_parser("site", help="the course as a website in build/site/ (Sphinx + MyST-NB, offline; make site "
                        "installs them)")
    st.add_argument("--stage", action="store_true", help="only stage the sources in build/site-src/")
    st.set_defaults(fn=_site)
    se = sub.add_parser("sections", help="the registered sections, as the course's map")
    se.add_argument("--readme", action="store_true", help="write the map into README.md between its markers")
    se.set_defaults(fn=_sections)
    sl = sub.add_parser("slides", help="the sections as static reveal.js decks (make slides), or their speaker notes")
    sl.add_argument("names", nargs="*", help="only decks whose name contains one of these")
    sl.add_argument("--out", default="build/slides")
    sl.add_argument("--notes", action="store_true", help="print each deck's speaker notes as a cue sheet instead")
    sl.set_defaults(fn=_slides)
    ns = sub.add_parser("new-section", help="a new section from the template (docs/adding-a-section.md)")
    ns.add_argument("key", help="two digits: the notebook's number")
    ns.add_argument("name", help="lower-case, the folder's and the notebook's name")
    ns.add_argument("title", help="the lecture section, in words")
    ns.add_argument("--family", default=None, help="the kernel family's name (default: the name)")
    ns.set_defaults(fn=_new_section)
    au = sub.add_parser("audit", help="audit any program's launch geometry from a profiler record, or run one")
    au.add_argument("--trace", default=None, help="a torch.profiler Chrome trace or a CUPTI record (json or json.gz)")
    au.add_argument("--steps", type=int, default=None, help="repetitions the record holds (default: its own marks)")
    au.add_argument("--by", choices=("sms", "wave"), default="sms", help="rank by blocks / SMs or by wave fill")
    au.add_argument("--mark", default=None, help="the ranges that are the steps, by their name's start (default: "
                                                  "launchlab.audit.step, else torch.profiler's ProfilerStep#N)")
    au.add_argument("--device", type=int, default=None, help="in a trace of several GPUs: audit this one (its id)")
    au.add_argument("--top", type=int, default=12, help="how many launch shapes the table shows (default 12)")
    au.add_argument("--tool", choices=("auto", "cupti", "torch"), default="auto", help="with a program to run")
    au.add_argument("--save", default=None, help="with a program to run: keep its record here (json.gz)")
    au.add_argument("--floors", type=int, default=0, metavar="N",
                    help="with a program to run: step 4 for the top N offenders (ncu's DRAM bytes, cold times)")
    au.add_argument("--csv", default=None, help="write every launch shape's row to this CSV file")
    au.add_argument("--json", default=None, help="write the table and its totals to this JSON file (with --grep: "
                                                  "every launch site, its API, kernel, grid and whether it was "
                                                  "followed)")
    au.add_argument("--figure", default=None, help="a PNG of idle SM-time per launch shape")
    au.add_argument("--grep", default=None, help="step 8: a source tree whose launch sites are listed, those whose "
                                                  "grid is built from --dimension marked")
    au.add_argument("--dimension", default="head", help="with --grep: the sharded dimension (default head)")
    au.add_argument("command", nargs=argparse.REMAINDER, help="-- python my_step.py ...")
    au.set_defaults(fn=_audit)
    return p


def subcommands() -> list[str]:
    return list(next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction)).choices)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["grade"]:                  # its own parser (launchlab.faces.grading.main): options pass through
        from launchlab.faces import grading
        return grading.main(argv[1:])
    args = parser().parse_args(argv)
    from launchlab.core import mode
    try:
        return args.fn(args)
    except mode.ModeError as e:              # a command that needs a GPU, run without one: one line, exit 2
        print(f"python -m launchlab {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
