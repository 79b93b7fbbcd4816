# Model files: the safetensors reader (common/safetensors.c) and the config / sentence-transformers
# reader (common/model_info.c), against the real model and hostile files the tests write.
# `ctest -R model_files` runs both.
ember_add_test(NAME model_files_safetensors
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model_files_safetensors.c
               LIBS ember_common TIMEOUT 120)
ember_add_test(NAME model_files_config
               SOURCES ${CMAKE_CURRENT_LIST_DIR}/test_model_files_config.c
               LIBS ember_common TIMEOUT 60)
