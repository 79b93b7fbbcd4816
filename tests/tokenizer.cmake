# Tokenizer tests (common/tokenizer.c and common/tok_*.c):
#   tokenizer_corpus  fixture: tests/reference/make_tokenizer_corpus.py writes the exactness
#                     corpus with Hugging Face `tokenizers` ids (ops/requirements-test.txt)
#   tokenizer_unit    hand-checked cases, malformed tokenizer.json, limits, threads
#   tokenizer_exact   every corpus case must give HF's ids and type ids exactly
#   tokenizer_unicode every code point through each character stage, compared with HF
if(Python3_EXECUTABLE)
    add_test(NAME tokenizer_corpus
             COMMAND ${Python3_EXECUTABLE}
                     ${CMAKE_SOURCE_DIR}/tests/reference/make_tokenizer_corpus.py
                     --tokenizer ${EMBER_TEST_MODEL_DIR}/tokenizer.json
                     --out ${EMBER_TEST_DATA_DIR})
else()
    add_test(NAME tokenizer_corpus
             COMMAND sh -c "echo 'tokenizer_corpus: Python 3 not found: install python3 and pip install -r ops/requirements-test.txt' >&2; exit 1")
endif()
set_tests_properties(tokenizer_corpus PROPERTIES FIXTURES_SETUP tokenizer_corpus TIMEOUT 300
                     LABELS cpu)

ember_add_test(NAME tokenizer_unit SOURCES test_tokenizer_unit.c LIBS ember_common Threads::Threads
               TIMEOUT 120)
ember_add_test(NAME tokenizer_exact SOURCES test_tokenizer_exact.c LIBS ember_common TIMEOUT 300
               FIXTURES_REQUIRED tokenizer_corpus)

# tokenizer_unicode: every code point through each character stage, compared with HF (verifies
# the generated tables of common/unicode_tables.c; about 15 s)
add_executable(tokenizer_unicode_dump test_tokenizer_unicode_dump.c)
target_link_libraries(tokenizer_unicode_dump PRIVATE ember_common)
if(Python3_EXECUTABLE)
    add_test(NAME tokenizer_unicode
             COMMAND ${Python3_EXECUTABLE}
                     ${CMAKE_SOURCE_DIR}/tests/reference/tokenizer_unicode_check.py
                     $<TARGET_FILE:tokenizer_unicode_dump>)
    set_tests_properties(tokenizer_unicode PROPERTIES TIMEOUT 300 LABELS cpu)
endif()
