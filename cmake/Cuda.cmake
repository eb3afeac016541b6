# TUTTI_WITH_CUDA (ON|OFF|AUTO) -> TUTTI_HAVE_CUDA, the CUDA language, TUTTI_NCCL_INCLUDE_DIR and
# TUTTI_NCCL_LIBRARY. AUTO turns CUDA on when nvcc, the toolkit (libcudart) and NCCL (nccl.h and
# libnccl) are all found; ON insists and names what is missing. Included by the root CMakeLists.txt
# before the runtime, so that enable_language(CUDA) happens at the top level.
#
# Where things are looked for: nvcc on PATH, in $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin
# (or CMAKE_CUDA_COMPILER); NCCL under NCCL_ROOT (variable or environment), then the toolkit's
# include and library folders (NVIDIA's wheels and the CUDA images put it there).
#
# AUTO never stops the configure: whatever makes CUDA unusable ends in "tutti: CUDA off: <reason>".
# Most of that is a plain "not found", but some of it is a CMake error raised inside CMake's own
# modules (a FindCUDAToolkit bug, an nvcc that cannot compile for this host compiler in
# enable_language), which no CMake code can catch. So AUTO first runs these same steps in a child
# CMake on a throwaway project (tutti_probe_cuda below, in CMakeFiles/tutti-cuda-probe/) and goes
# on only when that succeeded; ON skips the trial and lets any error stop the configure.
set(TUTTI_HAVE_CUDA OFF)

function(tutti_cuda_missing what)
  if(TUTTI_WITH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "TUTTI_WITH_CUDA=ON but ${what}. Install it (or point CMake at it: "
                        "CMAKE_CUDA_COMPILER, CUDAToolkit_ROOT, NCCL_ROOT), or configure with "
                        "-DTUTTI_WITH_CUDA=OFF or AUTO.")
  endif()
  if(TUTTI_CUDA_PROBING)
    # Inside the trial: hand the reason to the parent configure, which prints it.
    file(WRITE ${CMAKE_BINARY_DIR}/tutti-cuda-off.txt "${what}")
    return()
  endif()
  message(STATUS "tutti: CUDA off: ${what}")
endfunction()

# find_package(CUDAToolkit) with a work-around for CMake 3.25.0 and 3.25.1 (Debian 12's cmake is
# 3.25.1). Their FindCUDAToolkit, for any CUDA >= 10, marks CUDA::nvToolsExt deprecated with
# set_property(TARGET CUDA::nvToolsExt ...) whenever the project's cmake_minimum_required is 3.25 or
# more, without checking that the target exists. It exists only when the toolkit has libnvToolsExt,
# which CUDA 13 no longer ships (NVTX 3 is header-only), so the configure fails with "set_property
# could not find TARGET CUDA::nvToolsExt". CMake 3.25.2 checks for the target first (so does a
# patched 3.25.1: `dpkg -V cmake-data` names FindCUDAToolkit.cmake). The module reads the plain
# variable CMAKE_MINIMUM_REQUIRED_VERSION (no policy), so for the call it is lowered to 3.24, which
# only skips that deprecation note, and then put back. (An empty CUDA::nvToolsExt defined beforehand
# would also do, but would hide a real libnvToolsExt where a toolkit has one.)
macro(tutti_find_cudatoolkit)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.25 AND CMAKE_VERSION VERSION_LESS 3.25.2
     AND CMAKE_MINIMUM_REQUIRED_VERSION VERSION_GREATER_EQUAL 3.25)
    set(tutti_saved_minimum_required "${CMAKE_MINIMUM_REQUIRED_VERSION}")
    set(CMAKE_MINIMUM_REQUIRED_VERSION 3.24)
    find_package(CUDAToolkit QUIET)
    set(CMAKE_MINIMUM_REQUIRED_VERSION "${tutti_saved_minimum_required}")
    unset(tutti_saved_minimum_required)
  else()
    find_package(CUDAToolkit QUIET)
  endif()
endmacro()

# Runs tutti_find_cuda in a child CMake (same generator, compilers, nvcc, CMAKE_MODULE_PATH and
# CUDA/NCCL hints, TUTTI_WITH_CUDA=AUTO) and sets ok_var to TRUE when CUDA came out usable there, or
# to FALSE with reason_var saying why not: the reason tutti_find_cuda gave, or else the first CMake
# error of the trial (its whole output is in CMakeFiles/tutti-cuda-probe/output.log). A success is
# remembered for this nvcc (TUTTI_CUDA_PROBED), so a re-configure does not repeat the trial; a
# failure is not, so the next configure tries again.
function(tutti_probe_cuda ok_var reason_var)
  set(${ok_var} TRUE PARENT_SCOPE)
  if(TUTTI_CUDA_PROBED STREQUAL CMAKE_CUDA_COMPILER)
    return()
  endif()
  set(dir ${CMAKE_BINARY_DIR}/CMakeFiles/tutti-cuda-probe)
  file(REMOVE_RECURSE ${dir})
  file(WRITE ${dir}/src/CMakeLists.txt
    "cmake_minimum_required(VERSION ${CMAKE_MINIMUM_REQUIRED_VERSION})\n"
    "project(tutti_cuda_probe LANGUAGES C CXX)\n"
    "include(\"${CMAKE_CURRENT_FUNCTION_LIST_FILE}\")\n")
  # The settings go in an initial cache (-C) as bracket arguments: lists (CMAKE_MODULE_PATH,
  # CMAKE_CUDA_ARCHITECTURES) and paths with spaces pass unchanged.
  string(CONCAT init "set(TUTTI_CUDA_PROBING ON CACHE BOOL \"\")\n"
                     "set(TUTTI_WITH_CUDA AUTO CACHE STRING \"\")\n")
  foreach(var CMAKE_MAKE_PROGRAM CMAKE_TOOLCHAIN_FILE CMAKE_BUILD_TYPE
              CMAKE_C_COMPILER CMAKE_CXX_COMPILER CMAKE_C_FLAGS CMAKE_CXX_FLAGS
              CMAKE_CUDA_COMPILER CMAKE_CUDA_HOST_COMPILER CMAKE_CUDA_FLAGS CMAKE_CUDA_ARCHITECTURES
              CMAKE_MODULE_PATH CMAKE_PREFIX_PATH CUDAToolkit_ROOT NCCL_ROOT)
    if(DEFINED ${var})
      string(APPEND init "set(${var} [==[${${var}}]==] CACHE STRING \"\")\n")
    endif()
  endforeach()
  file(WRITE ${dir}/init.cmake "${init}")
  set(generator -G "${CMAKE_GENERATOR}")
  if(CMAKE_GENERATOR_PLATFORM)
    list(APPEND generator -A "${CMAKE_GENERATOR_PLATFORM}")
  endif()
  if(CMAKE_GENERATOR_TOOLSET)
    list(APPEND generator -T "${CMAKE_GENERATOR_TOOLSET}")
  endif()
  message(STATUS "tutti: trying CUDA (${CMAKE_CUDA_COMPILER}) in a trial configure")
  execute_process(
    COMMAND ${CMAKE_COMMAND} ${generator} -C ${dir}/init.cmake -S ${dir}/src -B ${dir}/build
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 600)
  file(WRITE ${dir}/output.log "${out}")
  if(NOT rc EQUAL 0)
    # A CMake error (tutti_find_cuda itself raises none with AUTO): the first "CMake Error at
    # FILE:LINE (COMMAND):" and the first paragraph of its text, on one line.
    set(reason "exit status ${rc}")
    if(out MATCHES "CMake Error[^\n]*:\n  [^\n]*(\n  [^\n]*)*")
      string(REGEX REPLACE "[ \n]+" " " reason "${CMAKE_MATCH_0}")
    elseif(out MATCHES "CMake Error[^\n]*")
      set(reason "${CMAKE_MATCH_0}")
    endif()
    string(STRIP "${reason}" reason)
    string(CONCAT reason "CMake could not set CUDA up; a trial configure stopped with: ${reason} "
                         "(its whole output: ${dir}/output.log)")
  elseif(EXISTS ${dir}/build/tutti-cuda-off.txt)
    file(READ ${dir}/build/tutti-cuda-off.txt reason)
  else()
    set(TUTTI_CUDA_PROBED "${CMAKE_CUDA_COMPILER}" CACHE INTERNAL "nvcc a CUDA trial passed with")
    return()
  endif()
  set(${ok_var} FALSE PARENT_SCOPE)
  set(${reason_var} "${reason}" PARENT_SCOPE)
endfunction()

macro(tutti_find_cuda)
  # ASan/TSan and libcudart do not mix (the CUDA runtime's allocations and driver threads trip both),
  # so a sanitizer build leaves CUDA out unless the caller insists.
  if(TUTTI_SANITIZE AND TUTTI_WITH_CUDA STREQUAL "AUTO")
    message(STATUS "tutti: CUDA off: sanitizer build (TUTTI_SANITIZE=${TUTTI_SANITIZE})")
    return()
  endif()
  if(NOT CMAKE_CUDA_COMPILER)
    find_program(TUTTI_NVCC nvcc
      HINTS ENV CUDA_HOME ENV CUDA_PATH ${CUDAToolkit_ROOT}
      PATH_SUFFIXES bin
      PATHS /usr/local/cuda/bin)
    if(NOT TUTTI_NVCC)
      tutti_cuda_missing("nvcc was not found")
      return()
    endif()
    set(CMAKE_CUDA_COMPILER ${TUTTI_NVCC} CACHE FILEPATH "CUDA compiler")
  endif()
  get_filename_component(tutti_cuda_bin ${CMAKE_CUDA_COMPILER} DIRECTORY)
  if(NOT DEFINED CUDAToolkit_ROOT)
    get_filename_component(CUDAToolkit_ROOT ${tutti_cuda_bin} DIRECTORY)
  endif()
  if(TUTTI_WITH_CUDA STREQUAL "AUTO" AND NOT TUTTI_CUDA_PROBING)
    tutti_probe_cuda(tutti_cuda_ok tutti_cuda_reason)
    if(NOT tutti_cuda_ok)
      tutti_cuda_missing("${tutti_cuda_reason}")
      return()
    endif()
  endif()
  tutti_find_cudatoolkit()
  if(NOT CUDAToolkit_FOUND OR NOT TARGET CUDA::cudart_static)
    tutti_cuda_missing("the CUDA toolkit (libcudart_static) was not found next to ${CMAKE_CUDA_COMPILER}")
    return()
  endif()
  # The kernels are C++20 (tutti's headers), which nvcc accepts from 12.0.
  if(CUDAToolkit_VERSION VERSION_LESS 12.0)
    tutti_cuda_missing("CUDA ${CUDAToolkit_VERSION} is older than 12.0 (nvcc's first with C++20)")
    return()
  endif()
  find_path(TUTTI_NCCL_INCLUDE_DIR nccl.h
    HINTS ${NCCL_ROOT} ENV NCCL_ROOT ${CUDAToolkit_INCLUDE_DIRS}
    PATH_SUFFIXES include)
  find_library(TUTTI_NCCL_LIBRARY nccl
    HINTS ${NCCL_ROOT} ENV NCCL_ROOT ${CUDAToolkit_LIBRARY_DIR}
    PATH_SUFFIXES lib lib64)
  if(NOT TUTTI_NCCL_INCLUDE_DIR OR NOT TUTTI_NCCL_LIBRARY)
    tutti_cuda_missing("NCCL (nccl.h and libnccl) was not found under NCCL_ROOT or the CUDA toolkit "
                       "(${CUDAToolkit_LIBRARY_DIR})")
    return()
  endif()

  # The GPUs libtutti's kernels run on, when the caller named none (-DCMAKE_CUDA_ARCHITECTURES=...,
  # or CUDAARCHS in the environment). CUDA 13 builds for 7.5 (Turing) and newer only, and CMake
  # 3.25 predates CUDA 13, so `all-major` would ask for architectures nvcc 13 refuses: the list is
  # spelled out. Real code for every generation from T4 (75) through A100 (80), A10/A40 (86),
  # L4/L40 (89), H100/H200 (90), B200 (100) to RTX 50xx (120), and compute_120 PTX that the driver
  # JIT-compiles on anything newer. reduce_kernels.cu takes about 14 s for this list on one idle
  # core (25 s beside a parallel build; 5 s for one architecture), so CI's 2-core, 45-minute budget
  # does not need a shorter list.
  # Before 12.8 nvcc knows no Blackwell (100, 120): the list ends at H100 with compute_90 PTX.
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
    if(CUDAToolkit_VERSION VERSION_GREATER_EQUAL 12.8)
      set(tutti_archs "75-real;80-real;86-real;89-real;90-real;100-real;120-real;120-virtual")
    else()
      set(tutti_archs "75-real;80-real;86-real;89-real;90-real;90-virtual")
    endif()
    set(CMAKE_CUDA_ARCHITECTURES "${tutti_archs}"
        CACHE STRING "CUDA architectures libtutti's kernels are built for")
  endif()
  if(CCACHE_PROGRAM)
    set(CMAKE_CUDA_COMPILER_LAUNCHER ${TUTTI_CCACHE})
  endif()
  # nvcc picks its own host compiler otherwise, which may not be the one the rest is built with.
  if(NOT CMAKE_CUDA_HOST_COMPILER)
    set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER} CACHE FILEPATH "nvcc's host compiler")
  endif()
  # libtutti carries the static CUDA runtime, so users need no libcudart of their own.
  set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
  enable_language(CUDA)
  # The kernels share tutti's C++20 headers. CMake 3.25 predates nvcc's C++20 support (12.0) and
  # refuses the CUDA20 dialect; nvcc 12+ spells it as g++ does, so CMake is told the flag.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  get_filename_component(TUTTI_NCCL_LIBRARY_DIR ${TUTTI_NCCL_LIBRARY} DIRECTORY)
  set(TUTTI_HAVE_CUDA ON)
endmacro()

if(NOT TUTTI_WITH_CUDA STREQUAL "OFF")
  # A macro, not a function: enable_language and the cache results must reach the top level. Its
  # return() leaves this file.
  tutti_find_cuda()
endif()
