/* kernels/kern_launch.cu — the process-wide switch for programmatic dependent launch
 * (kern_cuda.h; used by kern::launch in kern_cuda_dev.cuh). */
#include <atomic>

#include "kernels/kern_cuda.h"

namespace {
std::atomic<bool> g_pdl{true};
}

extern "C" void kern_pdl_set(bool on) {
    g_pdl.store(on, std::memory_order_relaxed);
}

extern "C" bool kern_pdl_enabled(void) {
    return g_pdl.load(std::memory_order_relaxed);
}
