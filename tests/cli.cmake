# The `ember` command-line tool, run as a real process against the real model (tests/test_cli.py).
add_test(NAME cli_ember COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/test_cli.py
         --ember $<TARGET_FILE:ember> --model ${EMBER_TEST_MODEL_DIR}
         --fixture ${CMAKE_SOURCE_DIR}/tests/fixtures/minilm_st_reference.bin)
set_tests_properties(cli_ember PROPERTIES TIMEOUT 600 LABELS cpu)
