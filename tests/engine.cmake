# tests/engine.cmake — the CPU engine against sentence-transformers (fixture made by
# tests/reference/make_embedding_fixture.py), validation, in-flight and shutdown behaviour.
if(TARGET ember_engine)
    ember_add_test(NAME engine_cpu SOURCES test_engine_cpu.c LIBS ember_engine ember_common
                   TIMEOUT 900)
endif()
