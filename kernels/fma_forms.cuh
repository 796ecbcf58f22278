// §7.1 the FMA trap: out = a * b + c written three ways. Included by fma_forms.cu (compiled as the course
// compiles everything: -fmad=true, nvcc's default) and by fma_forms_strict.cu (compiled with -fmad=false,
// scoped to that one file by launchlab.kernels.FAMILY_OPTIONS). The SASS of each says which became an FFMA.
#define FMA_FORMS(P)                                                                                        \
    extern "C" __global__ void P##_tmp(const float* a, const float* b, const float* c, float* out, int n) {  \
        const int i = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (i < n) {                                                                                     \
            const float tmp = a[i] * b[i]; /* a separate statement: still contractible */               \
            out[i] = tmp + c[i];                                                                         \
        }                                                                                                \
    }                                                                                                    \
    extern "C" __global__ void P##_inline(const float* a, const float* b, const float* c, float* out, int n) { \
        const int i = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (i < n) out[i] = a[i] * b[i] + c[i];                                                          \
    }                                                                                                    \
    extern "C" __global__ void P##_rn(const float* a, const float* b, const float* c, float* out, int n) {   \
        const int i = blockIdx.x * blockDim.x + threadIdx.x;                                             \
        if (i < n) out[i] = __fmul_rn(a[i], b[i]) + c[i]; /* a rounded product: never contracted */     \
    }
