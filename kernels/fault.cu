/* kernels/fault.cu — a kernel that fails on purpose, for the tests of the engine's failure path
 * (kern_fault_trap_cuda, kern_cuda.h). One thread waits delay_us on the GPU's clock, so that the
 * host can queue work behind it first, then executes a trap: the context is left with a sticky
 * error (cudaErrorLaunchFailure), as a faulting kernel of the model would leave it. */
#include "kernels/kern_cuda.h"

namespace {

__global__ void k_trap(uint64_t delay_ns) {
    uint64_t t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < delay_ns);
    __trap();
}

} // namespace

extern "C" int kern_fault_trap_cuda(int32_t delay_us, cudaStream_t stream, com_error_t *err) {
    if (delay_us < 0)
        return com_error_set(err, COM_EINVAL, "fault_trap_cuda: delay %d us", (int)delay_us);
    k_trap<<<1, 1, 0, stream>>>((uint64_t)delay_us * 1000u);
    KERN_CUDA_TRY(cudaGetLastError(), err);
    return 0;
}
