# Fuzz targets for the text layer and the server's request path (included from
# tests/text/CMakeLists.txt).
#
# With clang (libFuzzer available):  fuzz_tokenizer, fuzz_output_parser, fuzz_request
#   (-fsanitize=fuzzer,address,undefined) plus ctest smoke runs `fuzz_*_smoke` bounded to 15 s;
#   fuzz_request starts from the seed corpus tests/data/fuzz/request (real requests) and fails on
#   any input that takes over 1 s (-timeout=1).
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
set(DSS_FUZZ_TARGETS tokenizer output_parser request)

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

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
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
    endif()
    # The first corpus directory receives new inputs; the seed directory is only read.
    add_test(NAME fuzz_${target}_smoke
             COMMAND sh -c
                     "mkdir -p ${CMAKE_BINARY_DIR}/fuzz_smoke_corpus/${target} && exec $<TARGET_FILE:fuzz_${target}> -max_total_time=15 -max_len=${max_len} -timeout=1 -rss_limit_mb=4096 ${CMAKE_BINARY_DIR}/fuzz_smoke_corpus/${target} ${seeds}")
    list(APPEND long_cmds COMMAND ${CMAKE_COMMAND} -E make_directory
         ${CMAKE_BINARY_DIR}/fuzz_corpus/${target}
         COMMAND fuzz_${target} -max_total_time=${DSS_FUZZ_SECONDS} -max_len=${max_len} -timeout=1
         ${CMAKE_BINARY_DIR}/fuzz_corpus/${target} ${seeds})
  endforeach()
  add_custom_target(fuzz_text_long ${long_cmds} USES_TERMINAL
                    COMMENT "libFuzzer: each text target for ${DSS_FUZZ_SECONDS} s")
endif()
