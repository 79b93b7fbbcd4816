# tests/kernels_cuda.cmake — the CUDA kernels (kernels/*.cu) against their plain-C references.
# Label gpu; without a CUDA device the test prints "SKIPPED: no CUDA device" and exits 77.
if(TARGET ember_kernels_cuda)
    ember_add_test(NAME kernels_cuda SOURCES test_kernels_cuda.c
                   LIBS ember_kernels_cuda ember_kernels_ref ember_common LABELS gpu TIMEOUT 600)
    set_tests_properties(kernels_cuda PROPERTIES SKIP_RETURN_CODE 77)
endif()
