# Shared by the round trips that run an independent Python reference (llamagen_roundtrip.cmake,
# mar_roundtrip.cmake): PYTHON (default /usr/bin/python3), exit 77 (ctest SKIP_RETURN_CODE) when
# it has no torch, and run(), which fails the test with the command's output and leaves its
# standard output in `out`.
if(NOT PYTHON)
  set(PYTHON /usr/bin/python3)
endif()
execute_process(COMMAND ${PYTHON} -c "import torch" RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
if(NOT rc EQUAL 0)
  message("SKIP: ${PYTHON} has no torch (apt install python3-torch)")
  cmake_language(EXIT 77)
endif()

function(run)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${SOURCE} RESULT_VARIABLE rc
                  OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()
