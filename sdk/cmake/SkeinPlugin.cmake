# skein_add_plugin(<target> KIND <kind> SOURCES <src>... [LIBRARIES <lib>...]
#                  [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds a Skein plugin the one correct way: a MODULE library linked to
# skein::sdk and skein::kit, hidden visibility, no undefined symbols, an RPATH that finds
# libskein_sdk from <prefix>/lib/skein/plugins, installed into lib/skein/plugins.
# Used by Skein's own plugins and by third-party plugins alike.
function(skein_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "KIND;OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  set(kinds callback history parallel model dataset loss optimizer)
  if(NOT ARG_KIND IN_LIST kinds)
    message(FATAL_ERROR "skein_add_plugin(${target}): KIND must be one of ${kinds}, got '${ARG_KIND}'")
  endif()
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "skein_add_plugin(${target}): SOURCES is empty")
  endif()
  add_library(${target} MODULE ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE skein::sdk skein::kit ${ARG_LIBRARIES})
  # The C++ standard libtorch needs and the libstdc++ ABI flag come with skein::sdk (the host's).
  target_compile_definitions(${target} PRIVATE SKEIN_PLUGIN_KIND_${ARG_KIND})
  if(NOT ARG_OUTPUT_DIRECTORY AND DEFINED SKEIN_PLUGIN_OUTPUT_DIR)
    set(ARG_OUTPUT_DIRECTORY ${SKEIN_PLUGIN_OUTPUT_DIR})
  endif()
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden
    VISIBILITY_INLINES_HIDDEN ON
    POSITION_INDEPENDENT_CODE ON
    INSTALL_RPATH "$ORIGIN/../..;${SKEIN_SDK_LIBDIR}"
    BUILD_RPATH "$<TARGET_FILE_DIR:skein::sdk>")
  if(ARG_OUTPUT_DIRECTORY)
    set_target_properties(${target} PROPERTIES LIBRARY_OUTPUT_DIRECTORY ${ARG_OUTPUT_DIRECTORY})
  endif()
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION lib/skein/plugins)
    # In Skein's own tree: part of the `skein_runtime` target (what `skein train` needs).
    if(DEFINED SKEIN_PLUGIN_OUTPUT_DIR)
      set_property(GLOBAL APPEND PROPERTY SKEIN_RUNTIME_PLUGINS ${target})
    endif()
  endif()
endfunction()
