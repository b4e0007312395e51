# The plugin kinds, read from the one table of them: the SKEIN_PLUGIN_KINDS
# X-macro of skein/plugin.hpp, at SKEIN_PLUGIN_HEADER (set by the includer:
# sdk/CMakeLists.txt in Skein's tree, SkeinConfig.cmake in an installed SDK).
if(NOT EXISTS "${SKEIN_PLUGIN_HEADER}")
  message(FATAL_ERROR "SkeinPlugin.cmake: SKEIN_PLUGIN_HEADER '${SKEIN_PLUGIN_HEADER}' is no file (skein/plugin.hpp)")
endif()
file(READ "${SKEIN_PLUGIN_HEADER}" _skein_plugin_hpp)
string(REGEX MATCH "\n#define SKEIN_PLUGIN_KINDS\\(X\\)([^\n]*\\\\\n)*[^\n]*" _skein_kinds_macro
       "${_skein_plugin_hpp}")
string(REGEX MATCHALL "X\\([a-z_]+," _skein_kinds "${_skein_kinds_macro}")
list(TRANSFORM _skein_kinds REPLACE "X\\(([a-z_]+)," "\\1")
if(NOT _skein_kinds)
  message(FATAL_ERROR "SkeinPlugin.cmake: no SKEIN_PLUGIN_KINDS(X) table in ${SKEIN_PLUGIN_HEADER}")
endif()
set_property(GLOBAL PROPERTY SKEIN_PLUGIN_KINDS "${_skein_kinds}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${SKEIN_PLUGIN_HEADER}")
unset(_skein_plugin_hpp)
unset(_skein_kinds_macro)
unset(_skein_kinds)

# skein_add_plugin(<target> KIND <kind> SOURCES <src>... [LIBRARIES <lib>...]
#                  [OUTPUT_DIRECTORY <dir>] [NO_INSTALL])
#
# Builds a Skein plugin the one correct way: a MODULE library linked to
# skein::sdk and skein::kit, hidden visibility, no undefined symbols, an RPATH that finds
# libskein_sdk from <prefix>/lib/skein/plugins, installed into lib/skein/plugins.
# Used by Skein's own plugins and by third-party plugins alike.
function(skein_add_plugin target)
  cmake_parse_arguments(ARG "NO_INSTALL" "KIND;OUTPUT_DIRECTORY" "SOURCES;LIBRARIES" ${ARGN})
  get_property(kinds GLOBAL PROPERTY SKEIN_PLUGIN_KINDS)
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
      set_property(GLOBAL APPEND PROPERTY SKEIN_INSTALLED_TARGETS ${target})
    endif()
  endif()
endfunction()

# skein_add_plugin_library(<target> SOURCES <src>... [LIBRARIES <lib>...] [NO_INSTALL])
#
# A SHARED library of types that several plugins share, such as a model class
# a callback reaches with ctx.model<T>(): link it to each plugin
# (skein_add_plugin(... LIBRARIES <target>)). Its classes are declared with
# SKEIN_EXPORT and each has a virtual function defined in the library (its
# destructor will do), so their vtable and type information exist once, here,
# and a dynamic_cast in one plugin recognises an object another made.
# Installed into lib/, which the plugins' RPATH ($ORIGIN/../..) finds.
function(skein_add_plugin_library target)
  cmake_parse_arguments(ARG "NO_INSTALL" "" "SOURCES;LIBRARIES" ${ARGN})
  if(NOT ARG_SOURCES)
    message(FATAL_ERROR "skein_add_plugin_library(${target}): SOURCES is empty")
  endif()
  add_library(${target} SHARED ${ARG_SOURCES})
  target_link_libraries(${target} PUBLIC skein::sdk skein::kit ${ARG_LIBRARIES})
  set_target_properties(${target} PROPERTIES
    CXX_VISIBILITY_PRESET hidden  # only what SKEIN_EXPORT marks is shared
    VISIBILITY_INLINES_HIDDEN ON
    INSTALL_RPATH "$ORIGIN;${SKEIN_SDK_LIBDIR}"
    BUILD_RPATH "$<TARGET_FILE_DIR:skein::sdk>")
  target_link_options(${target} PRIVATE "LINKER:--no-undefined")
  if(NOT ARG_NO_INSTALL)
    install(TARGETS ${target} LIBRARY DESTINATION lib)
    if(DEFINED SKEIN_PLUGIN_OUTPUT_DIR)  # Skein's own tree: what its install copies
      set_property(GLOBAL APPEND PROPERTY SKEIN_INSTALLED_TARGETS ${target})
    endif()
  endif()
endfunction()
