# tests/kernels.cmake — the plain-C kernels (kernels/*.c) against double-precision references.
if(TARGET ember_kernels_ref)
    ember_add_test(NAME kernels_ref SOURCES test_kernels.c LIBS ember_kernels_ref TIMEOUT 300)
endif()
