# Wire protocol (common/protocol.c, common/msgpack_read.c, common/half.c): message round trips,
# forward compatibility, missing/wrong/duplicate keys, limits, truncation, hostile input, the
# bounded msgpack reader against msgpack-c's writer, float16. `ctest -R protocol` runs them (and
# the fuzz_protocol seed replay).
ember_add_test(NAME protocol_messages
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_protocol.c
               LIBS ember_common TIMEOUT 300)
ember_add_test(NAME protocol_reader
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_protocol_reader.c
               LIBS ember_common TIMEOUT 120)
ember_add_test(NAME protocol_half
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_protocol_half.c
               LIBS ember_common TIMEOUT 120)
