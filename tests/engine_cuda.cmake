# tests/engine_cuda.cmake — the CUDA engine against the CPU engine on EMBER_TEST_MODEL_DIR.
# Label gpu; without a CUDA device it prints "SKIPPED: no CUDA device" and exits 77.
if(TARGET ember_kernels_cuda)
    ember_add_test(NAME engine_cuda SOURCES test_engine_cuda.c LIBS ember_engine ember_common
                   LABELS gpu TIMEOUT 900)
    set_tests_properties(engine_cuda PROPERTIES SKIP_RETURN_CODE 77)
endif()
