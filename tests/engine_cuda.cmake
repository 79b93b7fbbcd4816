# tests/engine_cuda.cmake — the CUDA engine against the CPU engine on EMBER_TEST_MODEL_DIR, and
# its failure path (a kernel that traps: one process per way the failure is found, since the
# CUDA context is dead afterwards). Label gpu; without a CUDA device each prints
# "SKIPPED: no CUDA device" and exits 77.
if(TARGET ember_kernels_cuda)
    ember_add_test(NAME engine_cuda SOURCES test_engine_cuda.c LIBS ember_engine ember_common
                   LABELS gpu TIMEOUT 900)
    set_tests_properties(engine_cuda PROPERTIES SKIP_RETURN_CODE 77)
    foreach(how flags event graphs)
        add_test(NAME engine_cuda_fault_${how} COMMAND engine_cuda fault ${how})
        set_tests_properties(engine_cuda_fault_${how} PROPERTIES TIMEOUT 120 LABELS gpu
            ENVIRONMENT "${EMBER_TEST_ENV}" SKIP_RETURN_CODE 77)
    endforeach()
endif()
