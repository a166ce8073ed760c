# lookback_instrument(TARGET [AFTER_INLINING] [STATIC] [NO_LINK]
#                     [EXCLUDE_FILES file...] [EXCLUDE_FUNCTIONS name...])
#
# Builds TARGET's own sources with function-entry/exit hooks and links the
# recorder:
#   gcc:   -finstrument-functions (gcc traces inlined bodies too; AFTER_INLINING
#          is not available and is ignored with a message)
#   clang: -finstrument-functions, or with AFTER_INLINING
#          -finstrument-functions-after-inlining (only functions that survive
#          inlining are traced, as Hubble does: far fewer trace points)
# EXCLUDE_FILES / EXCLUDE_FUNCTIONS become gcc's
# -finstrument-functions-exclude-file-list / -exclude-function-list (substring
# matches, no cost at run time); clang has no equivalent, so there they are
# ignored with a message (mark functions __attribute__((no_instrument_function))).
# STATIC links liblookback.a (direct hook calls: the cheapest off path),
# otherwise liblookback.so; NO_LINK links nothing (`lookback record` preloads it).
function(lookback_instrument target)
  cmake_parse_arguments(LB "AFTER_INLINING;STATIC;NO_LINK" "" "EXCLUDE_FILES;EXCLUDE_FUNCTIONS" ${ARGN})
  set(_id "${CMAKE_CXX_COMPILER_ID}")
  if(NOT _id)
    set(_id "${CMAKE_C_COMPILER_ID}")
  endif()
  if(_id STREQUAL "Clang" AND LB_AFTER_INLINING)
    target_compile_options(${target} PRIVATE -finstrument-functions-after-inlining)
  else()
    if(LB_AFTER_INLINING)
      message(STATUS "lookback_instrument(${target}): AFTER_INLINING needs clang; using -finstrument-functions")
    endif()
    target_compile_options(${target} PRIVATE -finstrument-functions)
  endif()
  if(LB_EXCLUDE_FILES OR LB_EXCLUDE_FUNCTIONS)
    if(_id STREQUAL "GNU")
      if(LB_EXCLUDE_FILES)
        string(REPLACE ";" "," _files "${LB_EXCLUDE_FILES}")
        target_compile_options(${target} PRIVATE "-finstrument-functions-exclude-file-list=${_files}")
      endif()
      if(LB_EXCLUDE_FUNCTIONS)
        string(REPLACE ";" "," _fns "${LB_EXCLUDE_FUNCTIONS}")
        target_compile_options(${target} PRIVATE "-finstrument-functions-exclude-function-list=${_fns}")
      endif()
    else()
      message(STATUS "lookback_instrument(${target}): EXCLUDE_* lists need gcc; ignored for ${_id}")
    endif()
  endif()
  if(NOT LB_NO_LINK)
    if(LB_STATIC)
      target_link_libraries(${target} PRIVATE lookback::runtime_static)
    else()
      target_link_libraries(${target} PRIVATE lookback::runtime)
    endif()
  endif()
endfunction()
