"""python -m launchlab <command>

  env                 mode, banner, toolchain
  gates               every LAUNCHLAB_* gate, its value now, and the restore set
  compile [--sass]    compile every kernel offline with NVRTC (no GPU) and print its resources
  record [NAME ...]   on a GPU: measure and write the recordings (device, occupancy, section01)
  check-recordings    load every recording (fails on missing, corrupt or stale ones)
  summary             headline numbers of the recordings
  selftest            every kernel against its numpy reference, small inputs (live; sanitizer-friendly)
  bench [stream]      side-by-side ratios measured in one run (live)
  course [--out DIR]  execute every notebook headless into HTML
"""
from __future__ import annotations

import argparse
import sys


def _env(_args) -> int:
    from . import kernels, mode
    print(mode.banner())
    print(f"NVRTC (offline): {'.'.join(map(str, kernels.nvrtc_version()))}")
    print(f"cuobjdump: {kernels.tool('cuobjdump')}\nnvdisasm:  {kernels.tool('nvdisasm')}")
    return 0


def _gates(_args) -> int:
    from . import gates
    print(gates.table())
    print("\nrestore set (every gate to its baseline arm):\n  " + gates.restore_set())
    return 0


def _compile(args) -> int:
    from . import kernels
    for fam in kernels.all_families():
        b = kernels.compile_offline(fam)
        print(f"kernels/{fam}.cu  ->  {b.arch} cubin, {len(b.cubin)} bytes (NVRTC {b.nvrtc_version[0]}.{b.nvrtc_version[1]})")
        for e, low in b.lowered.items():
            r = b.resources[low]
            print(f"  {e:<32} {r.registers:>4} regs  {r.smem_static:>6} B smem  {r.stack_frame:>5} B stack  "
                  f"spills {r.spill_stores}/{r.spill_loads} B")
        if args.sass:
            print(b.sass())
    return 0


def _record(args) -> int:
    from . import recorder
    names = args.names or list(recorder.SECTIONS)
    recorder.record(names, args.out)
    print(recorder.summary(args.out))
    return 0


def _check(_args) -> int:
    from . import recordings
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
    from . import recorder
    print(recorder.summary())
    return 0


def _selftest(_args) -> int:
    from . import selftest
    return selftest.main()


def _bench(args) -> int:
    from . import bench
    return bench.main(args.what)


def _course(args) -> int:
    from . import course
    return course.build(args.out)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m launchlab", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    sub.add_parser("env").set_defaults(fn=_env)
    sub.add_parser("gates").set_defaults(fn=_gates)
    c = sub.add_parser("compile")
    c.add_argument("--sass", action="store_true")
    c.set_defaults(fn=_compile)
    r = sub.add_parser("record")
    r.add_argument("names", nargs="*")
    r.add_argument("--out", default=None, help="directory for the recordings (default data/recordings)")
    r.set_defaults(fn=_record)
    sub.add_parser("check-recordings").set_defaults(fn=_check)
    sub.add_parser("summary").set_defaults(fn=_summary)
    sub.add_parser("selftest").set_defaults(fn=_selftest)
    b = sub.add_parser("bench")
    b.add_argument("what", nargs="*", default=["stream"])
    b.set_defaults(fn=_bench)
    co = sub.add_parser("course")
    co.add_argument("--out", default="build/course")
    co.set_defaults(fn=_course)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
