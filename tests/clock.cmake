# tests/clock.cmake — common/clock.c: deadline arithmetic and timed waits on a monotonic condvar.
ember_add_test(NAME clock SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_clock.c
               LIBS ember_common Threads::Threads TIMEOUT 60)
