# cmake -P script: `cmake --install` the build tree into WORK/prefix, configure and build the
# consumer project against it with find_package(tunejit), run it on the installed seed log, and run
# the installed `tunejit` binary. Any failing step fails the test with its output.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${out}\n${err}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

file(REMOVE_RECURSE ${WORK})
set(prefix ${WORK}/prefix)
run_step("install" ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
run_step("configure consumer" ${CMAKE_COMMAND} -S ${SOURCE} -B ${WORK}/build -G ${GENERATOR}
         -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX})
run_step("build consumer" ${CMAKE_COMMAND} --build ${WORK}/build)
set(seed ${prefix}/share/tunejit/seed-vgg16-v100.log)
run_step("run consumer" ${WORK}/build/consumer ${seed})
# Every one of the seed log's 22 records is one of VGG-16's int8 batch-128 tasks (24: every task
# name that can implement each conv/dense node).
if(NOT step_output MATCHES "records 22 tasks 24 matched 22")
  message(FATAL_ERROR "consumer printed: ${step_output}")
endif()
run_step("installed tunejit" ${prefix}/bin/tunejit log show ${seed})
if(NOT step_output MATCHES "conv2d_NCHWc_int8.cuda")
  message(FATAL_ERROR "tunejit log show printed: ${step_output}")
endif()
