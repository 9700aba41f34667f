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
if(TUNEJIT_TSAN)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-fsanitize=thread>
                      $<$<COMPILE_LANGUAGE:CXX>:-fno-omit-frame-pointer>)
  add_link_options(-fsanitize=thread)
endif()
