# skein_find_torch(): finds libtorch and checks what Skein needs of it. The one
# place on the CMake side that knows libtorch's versions; Skein's own build and
# the installed SDK (SkeinConfig.cmake) both call it.
#
# Supported: libtorch 1.13 (Debian 12's libtorch-dev) and 2.x (PyPI's torch
# wheel, which carries libtorch). Tested: 1.13.1 and 2.15.0 (docs/development.md).
#
# Sets, in the caller's scope:
#   SKEIN_TORCH_VERSION   libtorch's version, as its CMake package gives it
#   SKEIN_CXX_STANDARD    the C++ standard libtorch's headers need (17, or 20 for torch >= 2.14);
#                         the SDK's targets carry it, so plugins compile with it
#   SKEIN_TORCH_CUDA      ON when this libtorch was built with CUDA
#
# Where to look: CMAKE_PREFIX_PATH or Torch_DIR, as libtorch's docs say. For a
# PyPI wheel give the torch package directory itself
# (python -c 'import torch, os; print(os.path.dirname(torch.__file__))'), so
# that its lib/ is searched before the system's.
macro(skein_find_torch)
  # A CUDA build of libtorch probes the GPUs for the architectures to compile
  # CUDA code for; Skein compiles none, and this machine may have no GPU.
  if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
    set(TORCH_CUDA_ARCH_LIST "9.0")
  endif()
  find_package(Torch REQUIRED)
  set(SKEIN_TORCH_VERSION "${Torch_VERSION}")
  if(SKEIN_TORCH_VERSION VERSION_LESS 1.13 OR NOT SKEIN_TORCH_VERSION VERSION_LESS 3)
    message(FATAL_ERROR "Skein: libtorch ${SKEIN_TORCH_VERSION} found at ${Torch_DIR}; "
      "Skein builds against libtorch 1.13 or 2.x (tested: 1.13.1, 2.15.0). "
      "Point CMAKE_PREFIX_PATH or Torch_DIR at one of those.")
  endif()
  # Two libtorchs on one machine (Debian's in /usr, a wheel's elsewhere): the
  # package's find_library calls can pick the other one's library, which links
  # and then crashes. Refuse a library from outside the package found.
  get_filename_component(_skein_torch_prefix "${TORCH_INSTALL_PREFIX}" REALPATH)
  get_filename_component(_skein_torch_library "${TORCH_LIBRARY}" REALPATH)
  string(FIND "${_skein_torch_library}" "${_skein_torch_prefix}/" _skein_at)
  if(NOT _skein_at EQUAL 0)
    message(FATAL_ERROR "Skein: libtorch ${SKEIN_TORCH_VERSION}'s CMake package is at ${Torch_DIR} "
      "but its library was found at ${TORCH_LIBRARY}, another libtorch. Set CMAKE_PREFIX_PATH to "
      "the libtorch (or torch package) directory ${TORCH_INSTALL_PREFIX}, not to its share/cmake.")
  endif()
  # libtorch >= 2.14 asks for C++20 on its target; Skein's libraries, plugins
  # and the SDK's consumers use the standard libtorch asks for, at least 17.
  get_target_property(_skein_torch_features torch INTERFACE_COMPILE_FEATURES)
  get_target_property(_skein_torch_options torch INTERFACE_COMPILE_OPTIONS)
  if("cxx_std_20" IN_LIST _skein_torch_features OR "${_skein_torch_options}" MATCHES "c\\+\\+20")
    set(SKEIN_CXX_STANDARD 20)
  else()
    set(SKEIN_CXX_STANDARD 17)
  endif()
  # A PyPI wheel's libtorch_cuda needs the CUDA libraries of the wheel's
  # nvidia-* packages (site-packages/nvidia/*/lib; libtorch.so's RPATH finds
  # them at run time). The linker must find the same ones when it links an
  # executable, not the CUDA toolkit's older NCCL in ld.so.conf.
  file(GLOB _skein_wheel_cuda_dirs LIST_DIRECTORIES true "${TORCH_INSTALL_PREFIX}/../nvidia/*/lib")
  if(_skein_wheel_cuda_dirs)
    string(REPLACE ";" ":" _skein_wheel_cuda_path "${_skein_wheel_cuda_dirs}")
    set_property(TARGET torch APPEND PROPERTY INTERFACE_LINK_OPTIONS "LINKER:-rpath-link,${_skein_wheel_cuda_path}")
  endif()
  if(TORCH_CUDA_LIBRARIES OR TARGET torch_cuda)
    set(SKEIN_TORCH_CUDA ON)
  else()
    set(SKEIN_TORCH_CUDA OFF)
  endif()
  message(STATUS "Skein: libtorch ${SKEIN_TORCH_VERSION} (${TORCH_INSTALL_PREFIX}), C++${SKEIN_CXX_STANDARD}, CUDA ${SKEIN_TORCH_CUDA}")
endmacro()

# skein_torch_minor(<out> <version>): "2.15" of "2.15.0+cu132", for comparing
# a libtorch, a Python torch and the libtorch a Skein was built with.
function(skein_torch_minor out version)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" minor "${version}")
  set(${out} "${minor}" PARENT_SCOPE)
endfunction()
