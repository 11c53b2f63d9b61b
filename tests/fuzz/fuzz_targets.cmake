# Fuzz targets for the text layer, the server's request path and the grammar front ends
# (included from tests/text/CMakeLists.txt).
#
# With clang (libFuzzer available):  fuzz_tokenizer, fuzz_output_parser, fuzz_request,
#   fuzz_grammar (-fsanitize=fuzzer,address,undefined) plus ctest smoke runs `fuzz_*_smoke`
#   bounded to 15 s; fuzz_request starts from the seed corpus tests/data/fuzz/request (real
#   requests), fuzz_grammar from tests/data/fuzz/grammar (regexes, GBNF grammars) and the JSON
#   Schema corpus tests/data/grammar/schemas (written with the input header into
#   BUILD/fuzz_seeds/grammar at configure time); every target fails on any input that takes over
#   1 s (-timeout=1).
#   Longer runs (documented target):  cmake --build BUILD --target fuzz_text_long
#   = each target for DSS_FUZZ_SECONDS (default 600) seconds on a corpus in BUILD/fuzz_corpus/.
# With any compiler: fuzz_*_replay, the same entry points driven by replay_main.cc over the
#   committed test data plus 2,000 deterministic mutations (ctest `fuzz_*_replay`).
set(DSS_FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
set(DSS_FUZZ_SEEDS ${CMAKE_SOURCE_DIR}/tests/data/text)
set(DSS_FUZZ_REQUEST_SEEDS ${CMAKE_SOURCE_DIR}/tests/data/fuzz/request)
set(DSS_FUZZ_SECONDS 600 CACHE STRING "Seconds per target for fuzz_text_long")
set(DSS_FUZZ_LIBS_tokenizer dss_text)
set(DSS_FUZZ_LIBS_output_parser dss_text)
set(DSS_FUZZ_LIBS_request dss_server_api)
set(DSS_FUZZ_LIBS_grammar dss_grammar)
set(DSS_FUZZ_TARGETS tokenizer output_parser request grammar)

# fuzz_grammar's input is a 2-byte header (front end, walk seed: see fuzz_grammar.cc) and the
# source text. Each schema of the corpus becomes one seed, alternately with compact ('0') and no
# ('1') JSON whitespace.
set(DSS_FUZZ_GRAMMAR_SEEDS ${CMAKE_SOURCE_DIR}/tests/data/fuzz/grammar)
set(DSS_FUZZ_GRAMMAR_SCHEMA_SEEDS ${CMAKE_BINARY_DIR}/fuzz_seeds/grammar)
file(GLOB DSS_FUZZ_GRAMMAR_SCHEMAS CONFIGURE_DEPENDS
     ${CMAKE_SOURCE_DIR}/tests/data/grammar/schemas/*.json)
file(REMOVE_RECURSE ${DSS_FUZZ_GRAMMAR_SCHEMA_SEEDS})
set(header 0)
foreach(schema ${DSS_FUZZ_GRAMMAR_SCHEMAS})
  get_filename_component(name ${schema} NAME_WE)
  file(READ ${schema} text)
  file(WRITE ${DSS_FUZZ_GRAMMAR_SCHEMA_SEEDS}/schema_${name} "${header}s${text}")
  math(EXPR header "1 - ${header}")
endforeach()

foreach(target ${DSS_FUZZ_TARGETS})
  add_executable(fuzz_${target}_replay ${DSS_FUZZ_DIR}/fuzz_${target}.cc ${DSS_FUZZ_DIR}/replay_main.cc)
  target_link_libraries(fuzz_${target}_replay PRIVATE ${DSS_FUZZ_LIBS_${target}})
  target_include_directories(fuzz_${target}_replay PRIVATE ${CMAKE_SOURCE_DIR})
  target_compile_definitions(fuzz_${target}_replay PRIVATE DSS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
  dss_target_defaults(fuzz_${target}_replay)
endforeach()
# GCC's -O2 + ASan flags a false maybe-uninitialized inside Beast's basic_parser::put (a
# boost::optional returned as none), which only this target calls directly.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  target_compile_options(fuzz_request_replay PRIVATE -Wno-maybe-uninitialized)
endif()
add_test(NAME fuzz_tokenizer_replay
         COMMAND fuzz_tokenizer_replay --mutations=2000 ${DSS_FUZZ_SEEDS}/tokenizer_cases.jsonl)
add_test(NAME fuzz_output_parser_replay
         COMMAND fuzz_output_parser_replay --mutations=20000 --control-prefix
                 ${DSS_FUZZ_SEEDS}/transcripts.jsonl)
file(GLOB DSS_FUZZ_REQUEST_SEED_FILES ${DSS_FUZZ_REQUEST_SEEDS}/*)
add_test(NAME fuzz_request_replay
         COMMAND fuzz_request_replay --mutations=5000 ${DSS_FUZZ_REQUEST_SEED_FILES})
file(GLOB DSS_FUZZ_GRAMMAR_SEED_FILES CONFIGURE_DEPENDS ${DSS_FUZZ_GRAMMAR_SEEDS}/*)
file(GLOB DSS_FUZZ_GRAMMAR_SCHEMA_SEED_FILES ${DSS_FUZZ_GRAMMAR_SCHEMA_SEEDS}/*)
add_test(NAME fuzz_grammar_replay
         COMMAND fuzz_grammar_replay --mutations=20000 ${DSS_FUZZ_GRAMMAR_SEED_FILES}
                 ${DSS_FUZZ_GRAMMAR_SCHEMA_SEED_FILES})

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # fuzz_grammar links its own copy of dss_grammar built with -fsanitize=fuzzer-no-link,address,
  # undefined: libFuzzer then sees coverage inside the compiler and matcher (not only in the
  # target's file) and ASan checks their memory accesses.
  get_target_property(dss_grammar_sources dss_grammar SOURCES)
  get_target_property(dss_grammar_dir dss_grammar SOURCE_DIR)
  get_target_property(dss_grammar_links dss_grammar LINK_LIBRARIES)
  list(TRANSFORM dss_grammar_sources PREPEND ${dss_grammar_dir}/)
  add_library(dss_grammar_fuzz STATIC EXCLUDE_FROM_ALL ${dss_grammar_sources})
  target_link_libraries(dss_grammar_fuzz PUBLIC ${dss_grammar_links})
  target_compile_options(dss_grammar_fuzz PRIVATE -fsanitize=fuzzer-no-link,address,undefined)
  dss_target_defaults(dss_grammar_fuzz)
  set(DSS_FUZZ_LIBS_grammar dss_grammar_fuzz)
  set(long_cmds)
  foreach(target ${DSS_FUZZ_TARGETS})
    add_executable(fuzz_${target} ${DSS_FUZZ_DIR}/fuzz_${target}.cc)
    target_link_libraries(fuzz_${target} PRIVATE ${DSS_FUZZ_LIBS_${target}})
    target_include_directories(fuzz_${target} PRIVATE ${CMAKE_SOURCE_DIR})
    target_compile_definitions(fuzz_${target} PRIVATE DSS_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
    target_compile_options(fuzz_${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(fuzz_${target} PRIVATE -fsanitize=fuzzer,address,undefined)
    dss_target_defaults(fuzz_${target})
    set(seeds)
    set(max_len 2048)
    if(target STREQUAL "request")
      set(seeds ${DSS_FUZZ_REQUEST_SEEDS})
      set(max_len 16384)
    elseif(target STREQUAL "grammar")
      set(seeds ${DSS_FUZZ_GRAMMAR_SEEDS} ${DSS_FUZZ_GRAMMAR_SCHEMA_SEEDS})
      set(max_len 16384)
    endif()
    # The first corpus directory receives new inputs; the seed directories are only read.
    string(JOIN " " seed_args ${seeds})
    add_test(NAME fuzz_${target}_smoke
             COMMAND sh -c
                     "mkdir -p ${CMAKE_BINARY_DIR}/fuzz_smoke_corpus/${target} && exec $<TARGET_FILE:fuzz_${target}> -max_total_time=15 -max_len=${max_len} -timeout=1 -rss_limit_mb=4096 ${CMAKE_BINARY_DIR}/fuzz_smoke_corpus/${target} ${seed_args}")
    list(APPEND long_cmds COMMAND ${CMAKE_COMMAND} -E make_directory
         ${CMAKE_BINARY_DIR}/fuzz_corpus/${target}
         COMMAND fuzz_${target} -max_total_time=${DSS_FUZZ_SECONDS} -max_len=${max_len} -timeout=1
         ${CMAKE_BINARY_DIR}/fuzz_corpus/${target} ${seeds})
  endforeach()
  add_custom_target(fuzz_text_long ${long_cmds} USES_TERMINAL
                    COMMENT "libFuzzer: each fuzz target for ${DSS_FUZZ_SECONDS} s")
endif()
