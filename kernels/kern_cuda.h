/* kernels/kern_cuda.h — what the CUDA side shares: the one CUDA / cuBLAS(Lt) check macro (a
 * returning flavour for library and engine code, a fatal one for tests, benches and tools) and
 * the bf16 helpers host code needs. Valid C11 and C++; needs the CUDA headers, so only code built
 * with EMBER_HAVE_CUDA includes it (the op headers kernels/<op>.h stay plain C and name the
 * stream as `struct CUstream_st *`, which is what cudaStream_t is).
 *
 *   KERN_CUDA_TRY(stmt, err)    on failure: records "<stmt>: <error name>: <string>
 *                               (<function> <file>:<line>)" into err (com_error_t *, may be NULL)
 *                               and `return COM_EINTERNAL;` from the enclosing function.
 *   KERN_CUDA_FATAL(stmt)       on failure: prints the same line to stderr and exit(1).
 *   KERN_CUBLAS_TRY / _FATAL    the same for cublasStatus_t (cuBLASLt calls); TRY also names
 *                               the context's sticky CUDA error when there is one.
 *
 * After every kernel launch: KERN_CUDA_TRY(cudaGetLastError(), err). Thread-safety: the macros
 * touch only err. No globals. */
#ifndef EMBER_KERNELS_KERN_CUDA_H
#define EMBER_KERNELS_KERN_CUDA_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "common/error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Records a failed check into err (when not NULL) and returns COM_EINTERNAL. what is the
 * library's own name and text for the status. */
static inline int kern_check_fail(com_error_t *err, const char *stmt, const char *name,
                                  const char *what, const char *func, const char *file, int line) {
    return com_error_set(err, COM_EINTERNAL, "%s: %s: %s (%s %s:%d)", stmt, name, what, func, file,
                         line);
}

/* A failed cuBLAS(Lt) call. cuBLAS reports a launch into a context that already holds a sticky
 * error (a kernel before it trapped) only as "failed to launch", so the CUDA error is looked up
 * and named as well: the log then says what broke. Costs nothing unless a call failed. */
static inline int kern_cublas_fail(com_error_t *err, const char *stmt, cublasStatus_t st,
                                   const char *func, const char *file, int line) {
    /* Not for a refused argument or shape (the tuner meets those), nor during a capture on this
     * thread, where a query would be an unsafe call; a sticky error shows in either call. */
    cudaError_t ce = cudaSuccess;
    if (st != CUBLAS_STATUS_INVALID_VALUE && st != CUBLAS_STATUS_NOT_SUPPORTED) {
        enum cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
        ce = cudaStreamIsCapturing(NULL, &cs);
        if (ce == cudaErrorStreamCaptureImplicit)
            ce = cudaSuccess;
        else if (ce == cudaSuccess && cs == cudaStreamCaptureStatusNone)
            ce = cudaStreamQuery(NULL); /* never blocks */
    }
    if (ce == cudaSuccess || ce == cudaErrorNotReady)
        return com_error_set(err, COM_EINTERNAL, "%s: cublasStatus: %s (%s %s:%d)", stmt,
                             cublasLtGetStatusString(st), func, file, line);
    return com_error_set(err, COM_EINTERNAL,
                         "%s: cublasStatus: %s; the CUDA context: %s: %s (%s %s:%d)", stmt,
                         cublasLtGetStatusString(st), cudaGetErrorName(ce), cudaGetErrorString(ce),
                         func, file, line);
}

static inline void kern_check_fatal(const char *stmt, const char *name, const char *what,
                                    const char *func, const char *file, int line) {
    fprintf(stderr, "FATAL: %s: %s: %s (%s %s:%d)\n", stmt, name, what, func, file, line);
    exit(1);
}

/* Programmatic dependent launch for the kernels of kernels/ (kern::launch): on by default;
 * kern_pdl_set(false) makes every later launch an ordinary one (for A/B timing and as a way out
 * should a driver mishandle it). Process-wide; set it before launching or capturing. */
void kern_pdl_set(bool on);
bool kern_pdl_enabled(void);

/* For tests of the failure path: queues on stream a kernel that waits delay_us, then traps,
 * leaving the context with a sticky error (every later CUDA call of the process fails). */
int kern_fault_trap_cuda(int32_t delay_us, cudaStream_t stream, com_error_t *err);

#define KERN_CUDA_TRY(stmt, err)                                                                   \
    do {                                                                                           \
        cudaError_t kern_rc_ = (stmt);                                                             \
        if (kern_rc_ != cudaSuccess)                                                               \
            return kern_check_fail((err), #stmt, cudaGetErrorName(kern_rc_),                       \
                                   cudaGetErrorString(kern_rc_), __func__, __FILE__, __LINE__);    \
    } while (0)

#define KERN_CUDA_FATAL(stmt)                                                                      \
    do {                                                                                           \
        cudaError_t kern_rc_ = (stmt);                                                             \
        if (kern_rc_ != cudaSuccess)                                                               \
            kern_check_fatal(#stmt, cudaGetErrorName(kern_rc_), cudaGetErrorString(kern_rc_),      \
                             __func__, __FILE__, __LINE__);                                        \
    } while (0)

#define KERN_CUBLAS_TRY(stmt, err)                                                                 \
    do {                                                                                           \
        cublasStatus_t kern_st_ = (stmt);                                                          \
        if (kern_st_ != CUBLAS_STATUS_SUCCESS)                                                     \
            return kern_cublas_fail((err), #stmt, kern_st_, __func__, __FILE__, __LINE__);         \
    } while (0)

#define KERN_CUBLAS_FATAL(stmt)                                                                    \
    do {                                                                                           \
        cublasStatus_t kern_st_ = (stmt);                                                          \
        if (kern_st_ != CUBLAS_STATUS_SUCCESS)                                                     \
            kern_check_fatal(#stmt, "cublasStatus", cublasLtGetStatusString(kern_st_), __func__,   \
                             __FILE__, __LINE__);                                                  \
    } while (0)

/* bf16 <-> fp32 on the host: round to nearest even (NaN stays a quiet NaN); exact widening. */
static inline uint16_t kern_bf16_from_f32(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float kern_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#ifdef __cplusplus
}
#endif

#endif
