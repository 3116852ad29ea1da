# write_if_changed(PATH CONTENT): writes CONTENT to PATH only when it differs from what PATH holds, so
# that generated sources (git revision, corpus, schema) do not trigger needless rebuilds.
function(write_if_changed path content)
  set(old "")
  if(EXISTS ${path})
    file(READ ${path} old)
  endif()
  if(NOT old STREQUAL content)
    file(WRITE ${path} "${content}")
  endif()
endfunction()
