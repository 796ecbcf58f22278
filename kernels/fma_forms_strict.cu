// §7.1 the same three forms, this file alone compiled with -fmad=false (launchlab.kernels.FAMILY_OPTIONS).
#include "fma_forms.cuh"
FMA_FORMS(strict)
