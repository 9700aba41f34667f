# Small helpers in the style of Abseil's absl_cc_library / absl_cc_test.

# tunejit_cc_library(NAME name SRCS ... HDRS ... DEPS ...)
# Creates tunejit_<name> with an alias tunejit::<name>. Include paths are rooted at the repo top, so
# headers are included as "jit/nvrtc_compiler.h".
# Libraries are installed (cmake --install) with their headers under include/<folder>/ and exported
# as tunejit::<name> for find_package(tunejit); pass TESTONLY to keep one out of the install.
function(tunejit_cc_library)
  cmake_parse_arguments(T "TESTONLY" "NAME" "SRCS;HDRS;DEPS" ${ARGN})
  set(target tunejit_${T_NAME})
  set(includes $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}> $<BUILD_INTERFACE:${PROJECT_BINARY_DIR}>
               $<INSTALL_INTERFACE:include>)
  if(T_SRCS)
    add_library(${target} STATIC ${T_SRCS} ${T_HDRS})
    target_include_directories(${target} PUBLIC ${includes})
    target_link_libraries(${target} PUBLIC ${T_DEPS})
  else()
    add_library(${target} INTERFACE ${T_HDRS})
    target_include_directories(${target} INTERFACE ${includes})
    target_link_libraries(${target} INTERFACE ${T_DEPS})
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${T_NAME})
  add_library(tunejit::${T_NAME} ALIAS ${target})
  if(NOT T_TESTONLY)
    install(TARGETS ${target} EXPORT tunejitTargets ARCHIVE DESTINATION lib)
    file(RELATIVE_PATH folder ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
    foreach(header IN LISTS T_HDRS)
      if(header MATCHES "\\.(h|cuh)$")
        install(FILES ${header} DESTINATION include/${folder})
      endif()
    endforeach()
  endif()
endfunction()

# tunejit_cc_test(NAME name SRCS ... DEPS ... [LABELS gpu] [TIMEOUT s])
# A GoogleTest binary registered with CTest. GPU tests carry LABELS gpu and call GTEST_SKIP() when no
# device is present, so they pass (as skipped) on CI machines without a GPU.
function(tunejit_cc_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SRCS;DEPS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SRCS})
  target_link_libraries(${T_NAME} PRIVATE ${T_DEPS} GTest::gtest GTest::gmock GTest::gtest_main)
  target_compile_definitions(${T_NAME} PRIVATE
    TUNEJIT_SOURCE_DIR="${PROJECT_SOURCE_DIR}" TUNEJIT_BINARY_DIR="${PROJECT_BINARY_DIR}")
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  set(labels cpu)
  if(T_LABELS)
    set(labels ${T_LABELS})
  endif()
  gtest_discover_tests(${T_NAME}
    DISCOVERY_TIMEOUT 60
    PROPERTIES LABELS "${labels}" TIMEOUT ${T_TIMEOUT}
               ENVIRONMENT "TUNEJIT_SOURCE_DIR=${PROJECT_SOURCE_DIR}")
endfunction()
