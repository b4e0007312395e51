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
# No CUDA toolkit is needed for a PyPI wheel built with CUDA: its nvidia-*
# packages carry the CUDA libraries libtorch links, and Skein compiles no CUDA
# code, so torch's CMake package is kept from looking for nvcc (below). A
# project that compiles CUDA code of its own against the wheel sets
# SKEIN_TORCH_CUDA_TOOLKIT to ON before finding Skein, and needs the toolkit.
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
  # A CUDA wheel's CMake package (Caffe2's public/cuda.cmake) defines
  # torch::cudart from the CUDA toolkit it finds, and stops without one, though
  # libtorch_cuda finds the wheel's own CUDA runtime through its RPATH and
  # Skein compiles no CUDA code. That file returns at once when torch::cudart
  # exists: where the libtorch to be found sits beside the wheel's nvidia/
  # packages, define it with their headers (cuda.h, nccl.h: c10d's NCCL
  # header includes them) and no library, so no toolkit is looked for, nor
  # its headers or libcudart (another CUDA version than the wheel's) used.
  # Elsewhere (Debian's libtorch, a wheel installed without its nvidia-*
  # packages, as scripts/gpu-bundle.sh does) torch's own search runs.
  set(_skein_wheel_prefix "")
  if(NOT SKEIN_TORCH_CUDA_TOOLKIT AND NOT TARGET torch::cudart)
    set(_skein_torch_dirs ${CMAKE_PREFIX_PATH} $ENV{CMAKE_PREFIX_PATH})
    if(Torch_DIR)
      list(PREPEND _skein_torch_dirs "${Torch_DIR}/../../..")
    endif()
    foreach(_skein_dir IN LISTS _skein_torch_dirs)
      if(EXISTS "${_skein_dir}/share/cmake/Torch/TorchConfig.cmake")
        if(IS_DIRECTORY "${_skein_dir}/../nvidia")
          get_filename_component(_skein_wheel_prefix "${_skein_dir}" REALPATH)
          file(GLOB _skein_wheel_cuda_includes LIST_DIRECTORIES true "${_skein_wheel_prefix}/../nvidia/*/include")
          add_library(torch::cudart INTERFACE IMPORTED)
          set_property(TARGET torch::cudart PROPERTY INTERFACE_INCLUDE_DIRECTORIES ${_skein_wheel_cuda_includes})
          # cuda_runtime.h includes crt/host_config.h, a package of its own
          # that torch's pins leave out (scripts/torch-pypi.txt installs it).
          file(GLOB _skein_wheel_crt "${_skein_wheel_prefix}/../nvidia/*/include/crt/host_config.h")
          file(GLOB _skein_wheel_runtime_h "${_skein_wheel_prefix}/../nvidia/*/include/cuda_runtime.h")
          if(_skein_wheel_runtime_h AND NOT _skein_wheel_crt)
            file(GLOB _skein_cuda_toolkit_dist "${_skein_wheel_prefix}/../cuda_toolkit-*.dist-info")
            string(REGEX MATCH "cuda_toolkit-([^/]*)\\.dist-info$" _skein_match "${_skein_cuda_toolkit_dist}")
            message(WARNING "Skein: the torch wheel at ${_skein_wheel_prefix} has CUDA headers without "
              "crt/host_config.h, so code that includes c10d's NCCL header (skein/torch_compat/process_group.hpp) "
              "will not compile; pip install 'cuda-toolkit[crt]==${CMAKE_MATCH_1}' into its environment")
          endif()
        endif()
        break()
      endif()
    endforeach()
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
  if(_skein_wheel_prefix AND NOT _skein_wheel_prefix STREQUAL _skein_torch_prefix)
    message(FATAL_ERROR "Skein: looked for libtorch at ${_skein_wheel_prefix} (CMAKE_PREFIX_PATH) but CMake's "
      "find_package(Torch) took ${TORCH_INSTALL_PREFIX}: give only one libtorch in CMAKE_PREFIX_PATH and Torch_DIR.")
  endif()
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
  # Torch's MKL target names link directories under an MKL root the wheel
  # does not have (/lib/intel64_win, /lib/win-x64, ...; its MKL is inside
  # libtorch_cpu): they would go on every link line and, through
  # CMAKE_INSTALL_RPATH_USE_LINK_PATH, into installed files' RPATH. Only
  # directories that exist stay.
  if(TARGET caffe2::mkl)
    get_target_property(_skein_mkl_dirs caffe2::mkl INTERFACE_LINK_DIRECTORIES)
    if(_skein_mkl_dirs)
      set(_skein_existing_dirs "")
      foreach(_skein_dir IN LISTS _skein_mkl_dirs)
        if(IS_DIRECTORY "${_skein_dir}")
          list(APPEND _skein_existing_dirs "${_skein_dir}")
        endif()
      endforeach()
      set_property(TARGET caffe2::mkl PROPERTY INTERFACE_LINK_DIRECTORIES "${_skein_existing_dirs}")
    endif()
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
