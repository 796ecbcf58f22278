// ${title}: y = a * x with a grid-stride loop, one float per thread per trip (the section template's kernel,
// docs/adding-a-section.md). Its numpy reference is launchlab/sections/${folder}/lesson.py's `reference`.
extern "C" __global__ void ${family}_scale(const float* __restrict__ x, float* __restrict__ y, float a,
                                           long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i];
    }
}
