// §7.1 the three forms, compiled with -fmad=true (the default). See fma_forms.cuh.
#include "fma_forms.cuh"
FMA_FORMS(fma)
