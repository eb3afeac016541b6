# The fuzz targets of tests/fuzz/targets.txt. Included from tests/fuzz/CMakeLists.txt, and also by
# hostfile/CMakeLists.txt's deferred call; the include guard makes the second a no-op.
#  - <name>_fuzz_replay (any compiler): runs the fuzz function over corpus/<name>/; a ctest.
#  - <name>_fuzz (clang only): the libFuzzer binary, with ASan and UBSan; ctest runs it for a few
#    seconds in a clang-configured tree. The usual g++ tree does not have it, so CI runs
#    scripts/fuzz.sh (`make fuzz`), which compiles the same sources with clang directly.
# A target whose <name>_fuzz.cc does not exist (yet) is skipped. Add a crashing input to
# corpus/<name>/ after fixing it, so the replay keeps it fixed.
include_guard(GLOBAL)

set(FUZZ_DIR ${CMAKE_CURRENT_LIST_DIR})
file(STRINGS ${FUZZ_DIR}/targets.txt fuzz_lines REGEX "^[a-z]")
foreach(line ${fuzz_lines})
  string(REGEX REPLACE "[ \t]+" ";" fields "${line}")
  list(POP_FRONT fields name library)
  set(fuzz_source ${FUZZ_DIR}/${name}_fuzz.cc)
  if(NOT EXISTS ${fuzz_source})
    continue()
  endif()
  set(corpus ${FUZZ_DIR}/corpus/${name})

  add_executable(${name}_fuzz_replay ${fuzz_source} ${FUZZ_DIR}/replay_main.cc)
  target_link_libraries(${name}_fuzz_replay PRIVATE ${library})
  add_test(NAME ${name}_fuzz_replay COMMAND ${name}_fuzz_replay ${corpus})
  set_tests_properties(${name}_fuzz_replay PROPERTIES LABELS "unit;fuzz" TIMEOUT 120)

  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    # The code under test is compiled into the target so libFuzzer sees its coverage.
    set(instrumented "")
    foreach(pattern ${fields})
      file(GLOB matched ${PROJECT_SOURCE_DIR}/${pattern})
      list(APPEND instrumented ${matched})
    endforeach()
    add_executable(${name}_fuzz ${fuzz_source} ${instrumented})
    target_include_directories(${name}_fuzz PRIVATE ${PROJECT_SOURCE_DIR}
                               ${PROJECT_SOURCE_DIR}/runtime/src ${PROJECT_SOURCE_DIR}/runtime/include)
    target_compile_options(${name}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined
                                                -fno-sanitize-recover=undefined)
    target_link_options(${name}_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_libraries(${name}_fuzz PRIVATE fmt::fmt nlohmann_json::nlohmann_json Threads::Threads)
    # New inputs go to a scratch directory first; the committed seed corpus is only read.
    set(work ${PROJECT_BINARY_DIR}/tests/fuzz/corpus-work/${name})
    file(MAKE_DIRECTORY ${work})
    add_test(NAME ${name}_fuzz
      COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=1
              $<TARGET_FILE:${name}_fuzz> -max_total_time=15 -timeout=10 -rss_limit_mb=1024
              -max_len=4096 ${work} ${corpus})
    set_tests_properties(${name}_fuzz PROPERTIES LABELS "fuzz" TIMEOUT 120)
  endif()
endforeach()
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(STATUS "tutti: the libFuzzer targets are skipped: they need clang, the C++ compiler is "
                 "${CMAKE_CXX_COMPILER_ID}; the *_fuzz_replay tests still run the corpora")
endif()
