# Text-layer tests (issue #3). Included from tests/text/CMakeLists.txt.
set(DSS_TEXT_TEST_DIR ${CMAKE_SOURCE_DIR}/tests/text)
dss_test(text_tokenizer_test SOURCES ${DSS_TEXT_TEST_DIR}/tokenizer_test.cc LIBS dss_text)
target_include_directories(text_tokenizer_test PRIVATE ${CMAKE_SOURCE_DIR})
dss_test(text_chat_template_test SOURCES ${DSS_TEXT_TEST_DIR}/chat_template_test.cc LIBS dss_text)
target_include_directories(text_chat_template_test PRIVATE ${CMAKE_SOURCE_DIR})
