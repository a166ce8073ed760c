# lookback_instrument(TARGET [AFTER_INLINING | INLINE [MIN_INSTRUCTIONS N]] [STATIC] [NO_LINK]
#                     [EXCLUDE_FILES file...] [EXCLUDE_FUNCTIONS name...])
#
# Builds TARGET's own sources with function-entry/exit trace points and links
# the recorder:
#   gcc:   -finstrument-functions (gcc traces inlined bodies too; AFTER_INLINING
#          is not available and is ignored with a message)
#   clang: -finstrument-functions, or with AFTER_INLINING
#          -finstrument-functions-after-inlining (only functions that survive
#          inlining are traced, as Hubble does: far fewer trace points)
#   INLINE (clang 14): the lookback pass plugin (liblookback-pass.so) inlines
#          the recorder's fast path after inlining instead of calling a hook:
#          tracing off costs about 0.1 ns per trace point instead of ~2 ns
#          (docs/pass.md). MIN_INSTRUCTIONS N skips functions without loops
#          under N IR instructions (XRay's rule; they vanish from the trace).
# EXCLUDE_FILES / EXCLUDE_FUNCTIONS (substring matches, no cost at run time):
#   gcc:    -finstrument-functions-exclude-file-list / -exclude-function-list;
#   INLINE: the pass's -lookback-exclude-file / -lookback-exclude, as *entry*
#           globs (function names: mangled, demangled, or demangled without
#           parameters, so "ns::" excludes a namespace);
#   clang hooks: no equivalent; ignored with a message (mark functions
#           __attribute__((no_instrument_function)), or use INLINE).
# STATIC links liblookback.a (direct hook calls: the cheapest off path for
# hooks), otherwise liblookback.so; NO_LINK links nothing (`lookback record`
# preloads it; with INLINE the program then exports lb_tls_ring so the
# preloaded runtime can share it).
function(lookback_instrument target)
  cmake_parse_arguments(LB "AFTER_INLINING;INLINE;STATIC;NO_LINK" "MIN_INSTRUCTIONS" "EXCLUDE_FILES;EXCLUDE_FUNCTIONS"
                        ${ARGN})
  set(_id "${CMAKE_CXX_COMPILER_ID}")
  if(NOT _id)
    set(_id "${CMAKE_C_COMPILER_ID}")
  endif()
  if(LB_INLINE)
    if(NOT _id STREQUAL "Clang")
      message(FATAL_ERROR "lookback_instrument(${target} INLINE): the lookback pass needs clang 14, not ${_id}")
    endif()
    if(NOT LOOKBACK_PASS_PLUGIN OR NOT EXISTS "${LOOKBACK_PASS_PLUGIN}")
      message(FATAL_ERROR "lookback_instrument(${target} INLINE): liblookback-pass.so was not installed "
                          "(lookback was built without llvm-14-dev)")
    endif()
    # -Xclang -load makes clang accept the plugin's -mllvm options.
    target_compile_options(${target} PRIVATE "SHELL:-Xclang -load -Xclang ${LOOKBACK_PASS_PLUGIN}"
                                             "-fpass-plugin=${LOOKBACK_PASS_PLUGIN}")
    foreach(_kind FUNCTIONS FILES)
      if(LB_EXCLUDE_${_kind})
        # Substrings, as gcc's lists: "*entry*" globs for the pass.
        list(TRANSFORM LB_EXCLUDE_${_kind} PREPEND "*" OUTPUT_VARIABLE _globs)
        list(TRANSFORM _globs APPEND "*")
        string(REPLACE ";" "," _globs "${_globs}")
        set(_opt "-lookback-exclude")
        if(_kind STREQUAL "FILES")
          set(_opt "-lookback-exclude-file")
        endif()
        target_compile_options(${target} PRIVATE "SHELL:-mllvm ${_opt}=${_globs}")
      endif()
    endforeach()
    if(LB_MIN_INSTRUCTIONS)
      target_compile_options(${target} PRIVATE "SHELL:-mllvm -lookback-min-instructions=${LB_MIN_INSTRUCTIONS}")
    endif()
    if(LB_NO_LINK)
      target_link_options(${target} PRIVATE "-Wl,--export-dynamic-symbol=lb_tls_ring*")
    elseif(LB_STATIC)
      # The pass refers to the runtime weakly, which pulls nothing out of an
      # archive: ask for the slow path and the guard registry by name.
      target_link_libraries(${target} PRIVATE lookback::runtime_static)
      target_link_options(${target} PRIVATE "-Wl,--undefined=lb_pass_record_slow"
                                            "-Wl,--undefined=lb_pass_register_guards")
    else()
      target_link_libraries(${target} PRIVATE lookback::runtime)
    endif()
    return()
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
      message(STATUS "lookback_instrument(${target}): EXCLUDE_* lists need gcc or INLINE; ignored for ${_id}")
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
