# tests/engine.cmake — the CPU engine against sentence-transformers (fixture made by
# tests/reference/make_embedding_fixture.py), validation, in-flight and shutdown behaviour.
if(TARGET ember_engine)
    ember_add_test(NAME engine_cpu SOURCES test_engine_cpu.c LIBS ember_engine ember_common
                   TIMEOUT 900)
endif()
if(TARGET ember_engine)
    # worker/tune_cache.c: the CUDA engine's GEMM choices kept across starts (a real file)
    ember_add_test(NAME tune_cache SOURCES test_tune_cache.c LIBS ember_engine ember_common
                   TIMEOUT 60)
endif()
if(TARGET ember_engine)
    # worker/bert_range.c: provable activation bounds against the reference kernels' values
    ember_add_test(NAME bert_range SOURCES test_bert_range.c LIBS ember_engine ember_common
                   TIMEOUT 60)
endif()
