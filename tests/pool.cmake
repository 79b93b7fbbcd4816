# The pool as real processes (tests/pool/): redis-server, ember-broker, ember-worker (cpu) on free
# loopback ports, driven by Python scripts with an independent client (pyzmq + msgpack, pinned in
# ops/requirements-test.txt). Each prints "N passed, N failed". They share one lock so that two of
# them never compete for the cores at once (heartbeats are 100 ms), and each stays under 300 s.
# Registered only once the broker and the worker exist (the folders are written in parallel).
if(TARGET ember-broker AND TARGET ember-worker AND Python3_Interpreter_FOUND)
    set(EMBER_POOL_ARGS --broker-bin $<TARGET_FILE:ember-broker>
        --worker-bin $<TARGET_FILE:ember-worker> --ember $<TARGET_FILE:ember>
        --model ${EMBER_TEST_MODEL_DIR})
    set(EMBER_POOL_ENV "OPENBLAS_NUM_THREADS=1;PYTHONUNBUFFERED=1"
        "EMBER_SOURCE_DIR=${CMAKE_SOURCE_DIR};EMBER_BINARY_DIR=${CMAKE_BINARY_DIR}")

    # ember_pool_test(NAME script [ARGS...]): one ctest running tests/pool/<script>.
    function(ember_pool_test name script)
        add_test(NAME ${name}
                 COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/tests/pool/${script}
                         ${EMBER_POOL_ARGS} ${ARGN})
        set_tests_properties(${name} PROPERTIES TIMEOUT 300 LABELS "cpu;pool"
                             RESOURCE_LOCK ember_pool ENVIRONMENT "${EMBER_POOL_ENV}")
    endfunction()

    ember_pool_test(pool_basic test_pool_basic.py)
    ember_pool_test(pool_faults_workers test_pool_faults.py --only kill9,sigstop,drain)
    ember_pool_test(pool_faults_services test_pool_faults.py --only redis,broker_restart,failover)
    ember_pool_test(pool_hostile test_pool_hostile.py)
    ember_pool_test(pool_launcher test_pool_launcher.py --pool-sh ${CMAKE_SOURCE_DIR}/ops/pool.sh)
    # a GPU worker's failure path, where the build has the CUDA engine (label gpu: without a GPU
    # it prints SKIPPED and exits 77)
    if(TARGET ember_kernels_cuda)
        ember_pool_test(pool_gpu test_pool_gpu.py)
        set_tests_properties(pool_gpu PROPERTIES LABELS "gpu;pool" SKIP_RETURN_CODE 77)
    endif()
endif()
