# Sanitizer builds (see README "Sanitizers and fuzzing").
if(TUNEJIT_ASAN AND TUNEJIT_TSAN)
  message(FATAL_ERROR "TUNEJIT_ASAN and TUNEJIT_TSAN cannot be combined; use two build trees")
endif()
if(TUNEJIT_ASAN)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-sanitize-recover=all>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined)
endif()
if(TUNEJIT_ASAN OR TUNEJIT_TSAN)
  # gcc's -fsanitize link spec turns off --as-needed, so every library on the link line becomes a
  # NEEDED entry, including the libcuda stub that CUDA::nvrtc drags in; the binaries then fail to
  # start on machines without a driver. The normal build links --as-needed: keep it that way (the
  # driver is dlopen'ed by jit/, never linked).
  add_link_options(-Wl,--as-needed)
endif()
if(TUNEJIT_FUZZ AND CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  # Every library, not only the parser a fuzzer is aimed at: coverage feedback and ASan checks
  # must reach whatever code the bytes flow into (a parser instrumented by hand once missed a
  # planted out-of-bounds read because its library was not).
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=fuzzer-no-link,address,undefined>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=address,undefined -Wl,--as-needed)
endif()
if(TUNEJIT_TSAN)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()

# tunejit_fuzz_target(NAME name SRCS ... DEPS ... CORPUS dir REGRESSIONS dir)
# One libFuzzer target (SRCS define LLVMFuzzerTestOneInput) and its inputs, declared the same way
# for every fuzzer:
#   - <name>_replay + CTest test <name>_replay (label cpu), in every build with tests, any compiler:
#     runs each file of CORPUS (the seed corpus) and REGRESSIONS (inputs that once crashed) through
#     the fuzz function once, with a plain main() (tests/sanitizers/fuzz_replay_main.cc). Under
#     TUNEJIT_ASAN it is a sanitizer test; in every build it keeps fixed crashes fixed.
#   - <name> (TUNEJIT_FUZZ=ON, clang only): the coverage-guided fuzzer, e.g.
#       build-fuzz/tests/cache/cache_entry_fuzz -max_total_time=60 COPY_OF_CORPUS
#     scripts/sanitize.sh runs every fuzzer on a temporary copy of its corpus.
# Dirs are relative to the repo root.
function(tunejit_fuzz_target)
  cmake_parse_arguments(F "" "NAME;CORPUS;REGRESSIONS" "SRCS;DEPS" ${ARGN})
  add_executable(${F_NAME}_replay ${F_SRCS}
                 ${PROJECT_SOURCE_DIR}/tests/sanitizers/fuzz_replay_main.cc)
  target_link_libraries(${F_NAME}_replay PRIVATE ${F_DEPS})
  add_test(NAME ${F_NAME}_replay
           COMMAND ${F_NAME}_replay ${PROJECT_SOURCE_DIR}/${F_CORPUS}
                   ${PROJECT_SOURCE_DIR}/${F_REGRESSIONS})
  set_tests_properties(${F_NAME}_replay PROPERTIES LABELS cpu TIMEOUT 600)
  if(TUNEJIT_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      message(FATAL_ERROR "TUNEJIT_FUZZ needs clang (-fsanitize=fuzzer): "
                          "-DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++")
    endif()
    add_executable(${F_NAME} ${F_SRCS})
    target_link_libraries(${F_NAME} PRIVATE ${F_DEPS})
    target_compile_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined
                                             -fno-omit-frame-pointer)
    target_link_options(${F_NAME} PRIVATE -fsanitize=fuzzer,address,undefined)
    # The replay binary links the same instrumented libraries, so it needs the runtimes too.
    target_link_options(${F_NAME}_replay PRIVATE -fsanitize=address,undefined)
  endif()
endfunction()
