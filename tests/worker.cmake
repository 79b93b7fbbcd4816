# tests/worker.cmake — ember-worker (worker/worker_*.c) as a process against a fake broker in the
# test (a ROUTER on tcp://127.0.0.1:*), with the real model on the CPU: one ctest per scenario
# (tests/test_worker.c says what each checks). worker_redis starts its own redis-server.
if(TARGET ember-worker)
    foreach(scenario basic faults drain cuda redis)
        ember_add_test(NAME worker_${scenario} SOURCES test_worker.c
                       LIBS ember_engine ember_common PkgConfig::ZMQ
                       ARGS ${scenario} $<TARGET_FILE:ember-worker> TIMEOUT 180)
        add_dependencies(worker_${scenario} ember-worker)
    endforeach()
endif()
