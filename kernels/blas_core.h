/* kernels/blas_core.h — OpenBLAS (a DYNAMIC_ARCH build, as Debian's) picks its kernels from the
 * CPU model when the library loads, before main. A model newer than its table gets the Prescott
 * (SSE3) kernels: OpenBLAS 0.3.21, Debian 12's, does that on an Emerald Rapids Xeon (family 6
 * model 207), where the CPU engine then runs about 4.5x slower than on the SkylakeX (AVX-512)
 * kernels. The one fix that takes effect before the library's constructor is the environment:
 * a program that runs the CPU engine re-executes itself once with OPENBLAS_CORETYPE set. */
#ifndef EMBER_KERNELS_BLAS_CORE_H
#define EMBER_KERNELS_BLAS_CORE_H

#ifdef __cplusplus
extern "C" {
#endif

/* The core type OpenBLAS should use here when it chose one older than the CPU's instruction set
 * ("SkylakeX" with AVX-512 F/BW/DQ/VL, "Haswell" with AVX2 and FMA) and OPENBLAS_CORETYPE is not
 * set (a value set by the user, even empty, is theirs); else NULL. */
const char *kern_blas_better_core(void);

/* Where kern_blas_better_core names a core: sets OPENBLAS_CORETYPE to it and re-executes
 * /proc/self/exe with the process's own arguments (/proc/self/cmdline, as started: getopt's
 * reordering of argv does not matter), keeping its pid. Returns only where there was nothing to
 * do, or where that failed (after a warning on stderr: the process goes on with the slower
 * kernels). Call it once the program knows it will run the CPU engine and before it opens files
 * or starts threads (exec keeps descriptors and ends threads). */
void kern_blas_reexec_for_core(void);

#ifdef __cplusplus
}
#endif

#endif
