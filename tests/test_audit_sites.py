"""Step 8 of the audit on any source tree (launchlab.audit.sites): every launch site, and whether its grid is built
from the sharded dimension -- each launch form the grep knows, a hit and a miss of each, what it says it could not
follow, and the course's own package against its §5 audit (which follows helpers and plan objects)."""
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from launchlab import audit
from launchlab.audit import sites
from launchlab.core import paths
from launchlab.sections.s05_sharding import audit as audit05

ROOT = Path(__file__).resolve().parent.parent


def tree(tmp_path, files: dict) -> Path:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(textwrap.dedent(text))
    return tmp_path


def by_line(found):
    return {(s.file, s.line): (s, hit) for s, hit in found}


def test_triton_tuple_and_lambda_grids_and_the_autotuned_flag(tmp_path):
    t = tree(tmp_path, {"tri.py": '''
        import triton

        @triton.autotune(configs=[], key=["n"])
        @triton.jit
        def scale(x, n, BLOCK: "tl.constexpr"):
            pass

        @triton.jit
        def per_head(x, n_head):
            pass

        def run(x, n_head, n):
            grid = lambda META: (triton.cdiv(n, META["BLOCK"]),)
            scale[grid](x, n)
            heads = n_head
            per_head[(heads, 4)](x, n_head)
        '''})
    got = by_line(audit.grep(t, "head"))
    s, hit = got[("tri.py", 15)]
    assert (s.kind, s.kernel, s.grid, hit) == ("triton", "scale", "grid", False)
    assert any("autotuned" in f for f in s.flags) and {"n", "META", "cdiv"} <= s.names
    s, hit = got[("tri.py", 17)]
    assert (s.kind, s.grid, hit) == ("triton", "(heads, 4)", True) and "n_head" in s.names   # through heads = n_head
    assert not any("autotuned" in f for f in s.flags)


def test_an_indexed_call_is_a_triton_launch_only_of_a_triton_jit_function(tmp_path):
    """`calls[n_head % n]()` is a list of callables indexed, not a launch, even in a file that imports triton;
    `fwd[(n_head,)](x)` is one where `fwd` is decorated @triton.jit -- in this file or in another file of the tree it
    is imported from; `self.x_proj[0](x)` and a compile cache's `cache[key](x)` are not."""
    body = textwrap.dedent("""
        def replay(calls, n_head, x, cache, key):
            calls[n_head % len(calls)]()
            fwd[(n_head,)](x)
            cache[key](x)
        """)
    t = tree(tmp_path, {"plain.py": body, "tri.py": "from triton import jit\n" + body,
                        "kern.py": "import triton\n\n@triton.jit(do_not_specialize=['T'])\ndef fwd(x):\n    pass\n",
                        "nb.py": "import numba\n" + body,
                        "model.py": "import triton\nclass M:\n    def f(self, x, n_head):\n"
                                    "        return self.x_proj[0](x)\n"})
    got = {(s.file, s.line): (s, hit) for s, hit in audit.grep(t, "head")}
    fwd_line = {f: (t / f).read_text().splitlines().index("    fwd[(n_head,)](x)") + 1 for f in ("nb.py", "plain.py",
                                                                                         "tri.py")}
    assert sorted(got) == sorted(fwd_line.items())
    assert all(s.kind == "triton" and s.kernel == "fwd" and hit for s, hit in got.values())
    alone = tree(tmp_path / "one", {"tri.py": "from triton import jit\n" + body})
    assert audit.grep(alone, "head") == []                     # fwd's @triton.jit is not in this tree


def test_numba_takes_the_first_subscript_as_the_grid_and_cupy_rawkernels_are_found(tmp_path):
    t = tree(tmp_path, {"nb.py": '''
        from numba import cuda

        def go(a, num_experts, n_head):
            bpg = num_experts * 2
            k[bpg, n_head](a)
        ''', "cp.py": '''
        import cupy as cp
        kern = cp.RawKernel("", "f")
        mod = cp.RawModule(code="")
        other = mod.get_function("g")

        def go(x, batch, n_head):
            kern((batch,), (n_head,), (x,))
            other((n_head, 2), (128,), (x,))
            print((n_head,), (1,), (x,))
        '''})
    got = by_line(audit.grep(t, "expert"))
    assert got[("nb.py", 6)][0].kind == "numba" and got[("nb.py", 6)][1] is True
    heads = by_line(audit.grep(t, "head"))
    assert heads[("nb.py", 6)][1] is False                     # n_head is the block there, not the grid
    assert heads[("cp.py", 8)][0].kind == "cupy" and heads[("cp.py", 8)][1] is False   # the block is n_head
    assert heads[("cp.py", 9)][1] is True
    assert ("cp.py", 10) not in heads                          # print is not a kernel


def test_cuda_cpp_launches_follow_dim3_and_skip_comments(tmp_path):
    t = tree(tmp_path, {"k.cu": '''
        // a launch in a comment: k<<<heads, 32>>>(x);
        /* and in a block comment: k<<<n_head, 32>>>(x); */
        __global__ void attn(float* x, int n_head) {}
        void launch(float* x, int n_head, int n, cudaStream_t s) {
          int blocks = (n + 255) / 256;
          dim3 grid(n_head, blocks);
          attn<<<grid, 256, 0, s>>>(x, n_head);
          attn<<<blocks, 256>>>(x, n_head);
          void* args[] = {&x};
          cudaLaunchKernel((void*)attn, dim3(n_head), dim3(128), args, 0, s);
          cuLaunchKernel(f, blocks, 1, 1, 128, 1, 1, 0, s, args, 0);
        }
        '''})
    found = audit.grep(t, "head")
    assert [(s.line, s.kind, hit) for s, hit in found] == [(8, "<<<>>>", True), (9, "<<<>>>", False),
                                                           (11, "cudaLaunchKernel", True), (12, "cuLaunchKernel", False)]
    assert {"n_head", "blocks", "n"} <= found[0][0].names


def test_what_the_grep_cannot_follow_is_said_beside_the_site(tmp_path):
    t = tree(tmp_path, {"h.py": '''
        def helper(k, grid, args):
            k.launch(grid, 128, args)

        def planned(k, p, args):
            k.launch(p.grid, 128, args)
        '''})
    got = by_line(audit.grep(t, "head"))
    assert "a parameter of helper()" in got[("h.py", 3)][0].unfollowed
    assert "read from p.grid" in got[("h.py", 6)][0].unfollowed
    text = sites.report(t, "head")
    assert "what a static grep cannot see" in text and "cuBLAS" in text and "autotuned" in text


def test_the_course_package_every_head_site_of_its_own_audit_is_a_hit_or_flagged():
    """The §5 audit follows the package's helpers and plan objects; the generic grep does not, and says so: every
    site §5 finds derived from 'head' in launchlab/kernels/ is, in the generic grep of that folder, a hit or a flagged
    site of the same file (never silently absent)."""
    gen = audit.grep(paths.PACKAGE / "kernels", "head")
    by_file: dict = {}
    for s, hit in gen:
        by_file.setdefault("kernels/" + s.file, []).append((s, hit))
    ours = [s for s, hit in audit05.grep("head") if hit and s.file.startswith("kernels/")]
    assert len(ours) >= 5
    for s in ours:
        assert any(hit or g.unfollowed for g, hit in by_file.get(s.file, [])), s
    hits = {(g.file, g.function) for g, hit in gen if hit}
    assert {("kda_decode.py", "step"), ("kda_contrast.py", "step")} <= hits


def test_bad_trees_and_dimensions_are_refused_in_words(tmp_path):
    with pytest.raises(sites.SitesError, match="no source tree"):
        audit.grep(tmp_path / "missing", "head")
    for bad in ("", "1head", "he ad", None):
        with pytest.raises(sites.SitesError, match="identifier"):
            audit.grep(tmp_path, bad)
    t = tree(tmp_path, {"broken.py": "def f(:\n", "ok.py": "def g(k, n_head):\n    k.launch((n_head,), 32, ())\n"})
    found, unparsed = sites.scan(t)
    assert unparsed == ["broken.py"] and len(found) == 1
    assert "1 Python file(s) the parser could not read" in sites.report(t, "head")
    assert sites.sites(t / "ok.py")[0].file == "ok.py"          # one file is a tree too


def test_the_dimension_matches_identifier_parts_only():
    assert sites.mentions("head", {"n_head"}) and sites.mentions("head", {"NUM_HEADS"})
    assert sites.mentions("head", {"heads"}) and sites.mentions("head", {"head_dim"})
    assert not sites.mentions("head", {"overhead"}) and not sites.mentions("head", {"headroom"})
    assert not sites.mentions("expert", {"inexpert"}) and sites.mentions("expert", {"num_experts"})


def test_the_cli_greps_a_tree(tmp_path):
    t = tree(tmp_path, {"k.cu": "void f(int n_head){ k<<<n_head, 32>>>(); }\n"})
    r = subprocess.run([sys.executable, "-m", "launchlab", "audit", "--grep", str(t), "--dimension", "head"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    said = " ".join(r.stdout.split())                             # a long tmp path wraps the line at 110
    assert r.returncode == 0 and "1 launch sites" in said and "1 with a grid built from 'head'" in said
    assert max(map(len, r.stdout.splitlines())) <= 110
    r = subprocess.run([sys.executable, "-m", "launchlab", "audit", "--grep", str(t), "--trace", "x.json"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 2 and "without --trace" in r.stderr
