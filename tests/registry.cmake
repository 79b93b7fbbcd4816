# The Redis registry against a real redis-server started by the test on a free port.
ember_add_test(NAME registry SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_registry.c
               LIBS ember_common TIMEOUT 120)
