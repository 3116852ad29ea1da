# Writes the source tree's git revision into OUT as NORMCHECK_GIT_REVISION, at build time (so a
# report never names a revision older than the code that wrote it). "-dirty" marks tracked files
# changed since that revision. The file is rewritten only when the text changes (no needless rebuilds).
include(${CMAKE_CURRENT_LIST_DIR}/write_if_changed.cmake)
execute_process(COMMAND git rev-parse --short=12 HEAD WORKING_DIRECTORY ${SRC}
                OUTPUT_VARIABLE rev OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR rev STREQUAL "")
  set(rev "unknown")
else()
  execute_process(COMMAND git status --porcelain --untracked-files=no WORKING_DIRECTORY ${SRC}
                  OUTPUT_VARIABLE changes ERROR_QUIET)
  if(NOT changes STREQUAL "")
    set(rev "${rev}-dirty")
  endif()
endif()
set(content "#define NORMCHECK_GIT_REVISION \"${rev}\"\n")
write_if_changed(${OUT} "${content}")
