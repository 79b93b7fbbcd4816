# The tree follows .clang-format (C, headers, CUDA); common/unicode_tables.c is generated and
# left as its generator writes it. `ctest -R format` names the files that drifted.
find_program(CLANG_FORMAT clang-format)
if(CLANG_FORMAT)
    add_test(NAME format_check
             COMMAND sh -c "git ls-files '*.c' '*.h' '*.cu' '*.cuh' | grep -v '^common/unicode_tables.c$' | xargs ${CLANG_FORMAT} --dry-run --Werror"
             WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
    set_tests_properties(format_check PROPERTIES TIMEOUT 120 LABELS cpu)
endif()
