# ember-broker (broker/): the tokenizer pool as a unit (broker_tokpool), and the real binary
# against fake workers and clients on loopback ports (broker_basic, broker_loss, broker_late;
# tests/test_broker.c says what each covers). `ctest -R broker` runs them.
if(TARGET ember-broker)
    ember_add_test(NAME broker_tokpool
                   SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_broker_tokpool.c
                   LIBS ember_broker_core TIMEOUT 60)

    add_executable(test_broker ${CMAKE_CURRENT_LIST_DIR}/test_broker.c
                   ${CMAKE_CURRENT_LIST_DIR}/test_broker_util.c)
    target_link_libraries(test_broker PRIVATE ember_common ember_test_util PkgConfig::ZMQ)
    add_dependencies(test_broker ember-broker)
    foreach(scenario basic loss late)
        add_test(NAME broker_${scenario}
                 COMMAND test_broker $<TARGET_FILE:ember-broker> ${scenario})
        set_tests_properties(broker_${scenario} PROPERTIES TIMEOUT 120 LABELS cpu
            ENVIRONMENT "${EMBER_TEST_ENV}")
    endforeach()
endif()
