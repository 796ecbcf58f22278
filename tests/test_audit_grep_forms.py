"""Step 8's grep on every launch form of today's kernel libraries (issue 57), each with a hit and a miss. The
snippets are written in the shapes the public code bases use (cited beside each; read with the library's `fetch`,
2026-12-05): DeepEP's launch macros, FlashMLA's cudaLaunchKernelEx and CUTLASS cluster launches, flash-linear-
attention's nested `def grid(meta)` and TileLang kernels, TileGym's cuTile launches, CuTe-DSL's keyword launch, and
llm.c's one-function-at-a-time grids. Each expected grid is the source's own text."""
import json
import subprocess
import sys
from pathlib import Path

from launchlab import audit
from launchlab.audit import sites
from test_audit_sites import tree          # a source tree written from {path: text}

ROOT = Path(__file__).resolve().parent.parent


def found(t, dimension="head"):
    return {(s.file, s.line): (s, hit) for s, hit in audit.grep(t, dimension)}


def line_of(t, rel, text):
    return next(i for i, ln in enumerate((t / rel).read_text().splitlines(), 1) if text in ln)


# ------------------------------------------------------------------ C++: launch configs (FlashMLA's combine and MLA)
EX = '''
    void combine(Params p, int num_heads, int batch, cudaStream_t s) {
      cudaLaunchConfig_t cfg = {
          dim3(batch * p.s_q, 1, ceil_div(num_heads, 64)),
          dim3(128, 1, 1), 0, s, nullptr, 0};
      cudaLaunchKernelEx(&cfg, combine_kernel, p);
    }
    void by_field(int n_head, int batch, cudaStream_t s) {
      cudaLaunchConfig_t c;
      c.gridDim = dim3(batch);
      c.blockDim = dim3(256);
      cudaLaunchKernelEx(&c, other_kernel, batch);
    }
    void from_caller(const cudaLaunchConfig_t& config, void* k, void** a) {
      cudaLaunchKernelExC(&config, k, a);
    }
    void driver(CUfunction f, int n_heads, void** a) {
      CUlaunchConfig cfg = {};
      cfg.gridDimX = n_heads; cfg.gridDimY = 1; cfg.gridDimZ = 1;
      cuLaunchKernelEx(&cfg, f, a, nullptr);
    }
    void cluster(Params params, int heads) {
      cutlass::ClusterLaunchParams launch_params = {
          dim3((heads / 64) * params.s_q, 1, 1), dim3(256, 1, 1), dim3(1, 1, 1), smem_size, params.stream};
      cutlass::launch_kernel_on_cluster(launch_params, (void*)kernel, params);
    }
    void made_elsewhere(Params p) {
      auto cfg = make_config(p);
      cudaLaunchKernelEx(&cfg, k, p);
    }
    #define CHECK_CUDA(x) do { auto e = (x); if (e) abort(); } while (0)
    void checked(int n_head, cudaStream_t s) {
      cudaLaunchConfig_t c2 = {dim3(n_head), dim3(64), 0, s, nullptr, 0};
      CHECK_CUDA(cudaLaunchKernelEx(&c2, checked_kernel, n_head));
    }
'''


def test_launch_configs_are_read_for_their_grid(tmp_path):
    t = tree(tmp_path, {"mla.cu": EX})
    got = found(t)
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "cudaLaunchKernelEx(&cfg, combine_kernel"))]
    assert (s.api, s.kernel, s.grid, s.function, hit, s.unfollowed) == (
        "cudaLaunchKernelEx", "combine_kernel", "dim3(batch * p.s_q, 1, ceil_div(num_heads, 64))", "combine", True,
        None)
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "cudaLaunchKernelEx(&c, other"))]
    assert (s.grid, hit, s.function) == ("dim3(batch)", False, "by_field")     # n_head is a parameter, not the grid
    assert s.unfollowed == "the grid is a parameter of by_field(): its callers choose it"
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "cudaLaunchKernelExC"))]
    assert s.api == "cudaLaunchKernelExC" and s.grid == "" and not hit
    assert s.unfollowed == "the launch config config is a parameter of from_caller(): its callers fill it"
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "cuLaunchKernelEx"))]
    assert (s.api, s.grid, hit) == ("cuLaunchKernelEx", "n_heads, 1, 1", True)
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "launch_kernel_on_cluster"))]
    assert (s.api, s.kernel, s.grid, hit) == ("cutlass::launch_kernel_on_cluster", "(void*)kernel",
                                              "dim3((heads / 64) * params.s_q, 1, 1)", True)
    s, hit = got[("mla.cu", line_of(t, "mla.cu", "cudaLaunchKernelEx(&cfg, k, p)"))]
    assert s.unfollowed == "the launch config cfg comes from make_config(): built in another function" and not hit
    # a launch written inside a macro's arguments (FlashMLA's CHECK_CUDA(cudaLaunchKernelEx(...))) is one site
    checked = [s for s, _ in audit.grep(t, "head") if s.function == "checked"]
    assert [(s.api, s.grid, s.via) for s in checked] == [("cudaLaunchKernelEx", "dim3(n_head)", "")]
    assert len(got) == 7


# ------------------------------------------------------------------ C++: macros (DeepEP's legacy kernels)
MACROS = '''
    #pragma once
    #define SETUP_LAUNCH_CONFIG(num_sms, num_threads, stream)                       \\
        cudaLaunchConfig_t cfg = {(num_sms), (num_threads), 0, stream, nullptr, 0}; \\
        cfg.numAttrs = 0
    #define LAUNCH_KERNEL(config, kernel, ...) CHECK(cudaLaunchKernelEx(config, kernel, ##__VA_ARGS__))
    #define CHECK(cmd) do { auto e = (cmd); if (e != cudaSuccess) throw e; } while (0)
    #define SWITCH_RANKS(case_macro) \\
        switch (num_ranks) {         \\
            case 2: case_macro(2);   \\
            case 4: case_macro(4);   \\
        }
    #define NEVER_USED(k, g) k<<<g, 128>>>()
'''
USE = '''
    #include "launch.cuh"
    void layout(int num_experts, int num_ranks, cudaStream_t stream) {
        int num_sms = (num_experts + 3) / 4 + num_ranks;
        SETUP_LAUNCH_CONFIG(num_sms, 256, stream);
        LAUNCH_KERNEL(&cfg, get_layout<256>, num_experts);
    }
    void notify(int num_channels, int num_ranks, cudaStream_t stream) {
    #define NOTIFY_CASE(ranks) LAUNCH_KERNEL(&cfg, notify_kernel<ranks>, num_channels); break
        SETUP_LAUNCH_CONFIG(num_channels * 2, 128, stream);
        SWITCH_RANKS(NOTIFY_CASE);
    #undef NOTIFY_CASE
    }
'''


def test_a_macro_whose_body_launches_is_followed_to_where_it_is_invoked(tmp_path):
    t = tree(tmp_path, {"launch.cuh": MACROS, "layout.cu": USE})
    got = found(t, "expert")
    s, hit = got[("layout.cu", line_of(t, "layout.cu", "LAUNCH_KERNEL(&cfg, get_layout"))]
    assert (s.api, s.kernel, s.grid, s.function, hit) == ("cudaLaunchKernelEx via LAUNCH_KERNEL", "get_layout<256>",
                                                          "(num_sms)", "layout", True)
    assert {"num_experts", "num_ranks"} <= s.names
    switch = line_of(t, "layout.cu", "SWITCH_RANKS(NOTIFY_CASE)")
    assert sum(1 for s, _ in audit.grep(t, "expert") if s.line == switch) == 1     # one site for the cases' grid
    s, hit = got[("layout.cu", switch)]
    assert (s.api, s.grid, hit) == ("cudaLaunchKernelEx via SWITCH_RANKS", "(num_channels * 2)", False)
    assert s.kernel in ("notify_kernel<2>", "notify_kernel<4>")
    # the macros' own bodies are no sites; the one macro nobody invokes is listed and said to be so
    s, _ = got[("launch.cuh", line_of(t, "launch.cuh", "NEVER_USED"))]
    assert s.unfollowed == "inside the macro NEVER_USED, which no file here invokes"
    assert len(got) == 3


# ------------------------------------------------------------------ C++: the follow, one function at a time (llm.c)
def test_the_cpp_follow_stays_in_its_function_and_takes_the_last_assignment(tmp_path):
    t = tree(tmp_path, {"attn.cu": '''
        void attention(int B, int T, int NH, int HS) {
            int N = B * T * NH;
            softmax<<<CEIL_DIV(N, 256), 256>>>(B, T);
        }
        void layernorm(int B, int T, int C, int NH) {
            int N = B * T * C;
            norm<<<CEIL_DIV(N, 512), 512>>>(B, T, C);
        }
        void reassigned(int B, int NH) {
            int blocks = B * NH;
            blocks = B * 4;
            k<<<blocks, 32>>>(B);
        }
        void by_a_call(int B, int NH) {
            k<<<grid_for_NH(B), 32>>>(B);
        }
        void passed(dim3 grid, int NH) {
            k<<<grid, 32>>>(NH);
        }
        void guarded(int B, int NH) {
            int blocks = B * NH;
            if (B > 0) {
                for (int i = 0; i < 2; i++) { k<<<blocks, 32>>>(B); }
            }
        }
        '''})
    got = found(t, "NH")
    hits = {s.function: hit for s, hit in got.values()}
    assert hits == {"attention": True, "layernorm": False, "reassigned": False, "by_a_call": False, "passed": False,
                    "guarded": True}                       # an if's or a for's block is looked through
    s, _ = next(v for v in got.values() if v[0].function == "by_a_call")
    assert "grid_for_NH" not in s.names and "B" in s.names
    s, _ = next(v for v in got.values() if v[0].function == "passed")
    assert s.unfollowed == "the grid is a parameter of passed(): its callers choose it"


# ------------------------------------------------------------------ Python: the Triton idioms (flash-linear-attention)
def test_a_nested_def_grid_is_followed_into_its_return(tmp_path):
    t = tree(tmp_path, {"chunk.py": '''
        import triton

        @triton.autotune(configs=[], key=["BT"])
        @triton.jit(do_not_specialize=["T"])
        def chunk_fwd_kernel_h(k, v, h, T, H: "tl.constexpr", BV: "tl.constexpr"):
            pass

        def chunk_fwd_h(k, v, h):
            B, T, H, K, V = *k.shape, v.shape[-1]
            N = B
            def grid(meta): return (triton.cdiv(V, meta['BV']), N * H)
            chunk_fwd_kernel_h[grid](k, v, h, T=T, H=H)

        def chunk_fwd_v(k, v, h):
            B, T, H, K, V = *k.shape, v.shape[-1]
            def grid(meta):
                return (triton.cdiv(V, meta['BV']), B)
            chunk_fwd_kernel_h[grid](k, v, h, T=T, H=H)
        '''})
    got = found(t, "H")
    s, hit = got[("chunk.py", 13)]
    assert (s.kind, s.kernel, hit) == ("triton def grid(meta)", "chunk_fwd_kernel_h", True)
    assert s.grid == "grid() returns (triton.cdiv(V, meta['BV']), N * H)" and s.unfollowed is None
    assert any("autotuned" in f for f in s.flags)
    s, hit = got[("chunk.py", 19)]
    assert s.kind == "triton def grid(meta)" and not hit                      # H is passed, not in the grid


def test_a_jit_of_another_library_is_not_triton(tmp_path):
    """numba's @cuda.jit is a jit too: its one-subscript call is neither numba's launch form nor Triton's."""
    t = tree(tmp_path, {"nb.py": '''
        from numba import cuda

        @cuda.jit
        def scale(x, n_head):
            pass

        def go(x, n_head):
            scale[n_head](x, n_head)
        ''', "tri.py": "import triton\n"})
    assert audit.grep(t, "head") == []


def test_tilelang_kernels_are_sites_with_their_grid(tmp_path):
    t = tree(tmp_path, {"tl.py": '''
        import tilelang
        import tilelang.language as T

        def build(B, H, V, BV):
            @T.prim_func
            def chunk_fwd(x: T.Tensor((B, H, V), "float32")):
                with T.Kernel(T.ceildiv(V, BV), B * H, threads=128) as (i_v, i_bh):
                    pass

            @T.prim_func
            def per_batch(x: T.Tensor((B, V), "float32")):
                with T.Kernel(B, threads=64) as (i_b,):
                    pass
            return chunk_fwd
        '''})
    got = found(t, "H")
    s, hit = got[("tl.py", 8)]
    assert (s.kind, s.kernel, s.grid, hit) == ("T.Kernel", "chunk_fwd", "(T.ceildiv(V, BV), B * H)", True)
    s, hit = got[("tl.py", 13)]
    assert (s.kind, s.kernel, s.grid, hit) == ("T.Kernel", "per_batch", "(B,)", False)


def test_cutile_launches_read_the_grid_not_the_stream(tmp_path):
    """TileGym's cuTile ops: ct.launch(stream, grid, kernel, args) -- the first argument is the stream."""
    t = tree(tmp_path, {"ct.py": '''
        import cuda.tile as ct
        import torch

        def attention(q, n_heads, tm):
            M = q.shape[0]
            grid = (ct.cdiv(M, tm), n_heads, 1)
            ct.launch(torch.cuda.current_stream(), grid, attention_kernel, (q, tm))

        def matmul(a, tm):
            grid = (ct.cdiv(a.shape[0], tm), 1, 1)
            ct.launch(torch.cuda.current_stream(), grid, matmul_kernel, (a, tm))
        '''})
    got = found(t)
    s, hit = got[("ct.py", 8)]
    assert (s.kind, s.kernel, s.grid, hit) == ("ct.launch", "attention_kernel", "grid", True)
    s, hit = got[("ct.py", 12)]
    assert (s.kind, s.kernel, hit) == ("ct.launch", "matmul_kernel", False)
    assert "current_stream" not in s.grid


def test_keyword_launches_cute_dsl_and_compiled_modules(tmp_path):
    t = tree(tmp_path, {"cute_op.py": '''
        import cutlass
        import cutlass.cute as cute

        class Norm:
            @cute.jit
            def __call__(self, mX, n_heads, batch, stream):
                self.kernel(mX).launch(grid=[n_heads, batch, 1], block=[128, 1, 1], stream=stream)
                self.kernel(mX).launch(grid=[batch, 1, 1], block=[128, 1, 1], stream=stream)
        ''', "mod.py": '''
        def decode(kernel_wrapper, kernel, num_head, B):
            grid_x = (num_head + 15) // 16
            kernel_wrapper.launch(grid=(grid_x, B), kernel=kernel, args=[])
        '''})
    got = found(t)
    s, hit = got[("cute_op.py", 8)]
    assert (s.kind, s.kernel, s.grid, hit) == ("launch(grid=) CuTe-DSL", "self.kernel", "[n_heads, batch, 1]", True)
    assert got[("cute_op.py", 9)][1] is False
    s, hit = got[("mod.py", 4)]
    assert (s.kind, s.kernel, s.grid, hit) == ("launch(grid=)", "kernel", "(grid_x, B)", True)


# ------------------------------------------------------------------ the JSON and the report
def test_the_cli_writes_every_site_as_json(tmp_path):
    t = tree(tmp_path / "src", {"mla.cu": EX})
    out = tmp_path / "sites.json"
    r = subprocess.run([sys.executable, "-m", "launchlab", "audit", "--grep", str(t), "--json", str(out)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    assert max(map(len, r.stdout.splitlines())) <= 110
    doc = json.loads(out.read_text())
    assert len(doc["sites"]) == 7 and doc["dimension"] == "head"
    assert all(list(s) == ["file", "line", "function", "api", "kernel", "grid", "from_dimension", "unfollowed"]
               for s in doc["sites"])
    ex = next(s for s in doc["sites"] if s["function"] == "from_caller")
    assert ex["unfollowed"].startswith("the launch config config is a parameter") and ex["from_dimension"] is False
    assert sum(s["from_dimension"] for s in doc["sites"]) == 4
    assert set(doc["apis"]) == set(sites.GREP_APIS)
    text = sites.report(t, "head")
    assert "4 with a grid built from 'head'; 4 whose grid the grep could not follow (marked ?)" in " ".join(text.split())


def test_a_driver_launch_reads_all_three_grid_dimensions_and_python_follows_augmented_assignments(tmp_path):
    """cuLaunchKernel(f, gridX, gridY, gridZ, blockX, ...): a grid whose z is the head count is a hit, and its grid
    is the three dimensions as written. In Python, `blocks *= n_head` is an assignment the grid is built through."""
    t = tree(tmp_path, {"drv.cu": '''
        void launch(CUfunction f, int n, int n_head, CUstream s, void** args) {
          cuLaunchKernel(f, n / 128, 1, n_head, 128, 1, 1, 0, s, args, 0);
        }
        ''', "aug.py": '''
        def run(k, x, batch, n_head):
            blocks = batch
            blocks *= n_head
            k.launch((blocks,), (128,), (x,))
        '''})
    got = found(t)
    s, hit = got[("drv.cu", line_of(t, "drv.cu", "cuLaunchKernel"))]
    assert (s.kind, s.grid, hit) == ("cuLaunchKernel", "n / 128, 1, n_head", True)
    s, hit = got[("aug.py", line_of(t, "aug.py", "k.launch"))]
    assert hit and {"blocks", "batch", "n_head"} <= s.names


def test_follow_names_what_it_had_not_followed_when_its_depth_ran_out():
    """a <- b <- c <- d <- e <- f: four steps from `a` reach `e` and stop there, so `e` is a leaf the grep could not
    follow further (never silently dropped); one step more reaches `f`, which nothing sets."""
    scope = "int e = f + 1; int d = e; int c = d; int b = c; int a = b;"
    seen, leaves = sites.follow(scope, {"a"}, depth=4)
    assert seen == {"a", "b", "c", "d", "e"} and leaves == {"e"}
    seen, leaves = sites.follow(scope, {"a"}, depth=5)
    assert seen == {"a", "b", "c", "d", "e", "f"} and leaves == {"f"}
