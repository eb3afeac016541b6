# Fuzzing the hostfile parser. Included from hostfile/CMakeLists.txt at the end of the top-level
# directory (BUILD_TESTING is known only then), or from tests/fuzz/CMakeLists.txt; paths are
# relative to this file so either works.
#  - hostfile_fuzz_replay (any compiler): runs the fuzz function over the seed corpus; a ctest.
#  - hostfile_parse_fuzz (clang only): the libFuzzer binary, with ASan and UBSan; ctest runs it for
#    a few seconds in a clang-configured tree. The usual g++ tree does not have it, so CI runs
#    scripts/fuzz.sh (`make fuzz`), which compiles the same target with clang directly.
# Add a crashing input to corpus/ after fixing it, so the replay keeps it fixed.
set(FUZZ_CORPUS ${CMAKE_CURRENT_LIST_DIR}/corpus)
set(FUZZ_WORK ${PROJECT_BINARY_DIR}/tests/fuzz/corpus-work)

add_executable(hostfile_fuzz_replay ${CMAKE_CURRENT_LIST_DIR}/hostfile_parse_fuzz.cc
                                   ${CMAKE_CURRENT_LIST_DIR}/replay_main.cc)
target_link_libraries(hostfile_fuzz_replay PRIVATE tutti_hostfile)
add_test(NAME hostfile_fuzz_replay COMMAND hostfile_fuzz_replay ${FUZZ_CORPUS})
set_tests_properties(hostfile_fuzz_replay PROPERTIES LABELS "unit;fuzz" TIMEOUT 120)

if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # The parser's sources are compiled into the target so libFuzzer sees their coverage.
  set(instrumented dns_name.cc emit.cc hostfile.cc parse.cc)
  list(TRANSFORM instrumented PREPEND ${PROJECT_SOURCE_DIR}/hostfile/)
  add_executable(hostfile_parse_fuzz ${CMAKE_CURRENT_LIST_DIR}/hostfile_parse_fuzz.cc ${instrumented})
  target_include_directories(hostfile_parse_fuzz PRIVATE ${PROJECT_SOURCE_DIR})
  target_compile_options(hostfile_parse_fuzz PRIVATE -fsanitize=fuzzer,address,undefined
                                                     -fno-sanitize-recover=undefined)
  target_link_options(hostfile_parse_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(hostfile_parse_fuzz PRIVATE tutti_core fmt::fmt)
  # New inputs go to a scratch directory first; the committed seed corpus is only read.
  add_test(NAME hostfile_parse_fuzz
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
            $<TARGET_FILE:hostfile_parse_fuzz> -max_total_time=15 -timeout=10 -rss_limit_mb=1024
            -max_len=4096 ${FUZZ_WORK} ${FUZZ_CORPUS})
  set_tests_properties(hostfile_parse_fuzz PROPERTIES LABELS "fuzz" TIMEOUT 120)
  file(MAKE_DIRECTORY ${FUZZ_WORK})
else()
  message(STATUS "tutti: hostfile_parse_fuzz (libFuzzer) skipped: needs clang, the C++ compiler is "
                 "${CMAKE_CXX_COMPILER_ID}; hostfile_fuzz_replay still runs the corpus")
endif()
