# PyTorch 2.x beside Debian's 1.13: runtime/torch built a second time, as a project of its own
# (runtime/torch/standalone.cmake), against the torch of TUTTI_TORCH2_PYTHON and this build's
# libtutti, into <build>/torch2 (python/ holds the importable package, bin/ and lib/ the C++ parts).
# One CMake project cannot hold two libtorch packages (both define the targets torch and c10), so it
# is an ExternalProject, rebuilt with every build (its own ninja decides what is stale).
#
# TUTTI_TORCH2_PYTHON: a Python whose torch is 2.x, OFF, or AUTO (the default): the venv that
# scripts/install-torch2.sh makes (make deps), ${TUTTI_TORCH2_VENV:-~/.cache/tutti/torch2-venv},
# when it is there.
set(TUTTI_TORCH2_PYTHON AUTO CACHE STRING "Python with PyPI's torch 2.x for a second build of the torch binding (path|AUTO|OFF)")
set(TUTTI_HAVE_TORCH2 OFF)
set(TUTTI_TORCH2_BUILD_DIR ${CMAKE_BINARY_DIR}/torch2)

set(torch2_python "")
if(TUTTI_TORCH2_PYTHON STREQUAL "AUTO")
  if(DEFINED ENV{TUTTI_TORCH2_VENV})
    set(torch2_venv $ENV{TUTTI_TORCH2_VENV})
  else()
    set(torch2_venv $ENV{HOME}/.cache/tutti/torch2-venv)
  endif()
  if(EXISTS ${torch2_venv}/bin/python)
    set(torch2_python ${torch2_venv}/bin/python)
  endif()
elseif(NOT TUTTI_TORCH2_PYTHON STREQUAL "OFF" AND TUTTI_TORCH2_PYTHON)
  set(torch2_python ${TUTTI_TORCH2_PYTHON})
endif()

# Sanitizer builds run no Python (an ASan-instrumented extension needs its runtime preloaded), and
# TUTTI_WITH_TORCH=OFF means no torch at all.
if(torch2_python AND NOT TUTTI_SANITIZE AND NOT TUTTI_WITH_TORCH STREQUAL "OFF")
  execute_process(
    COMMAND ${torch2_python} -c "import torch; print(torch.__version__)"
    OUTPUT_VARIABLE torch2_version OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE torch2_failed ERROR_QUIET)
  if(torch2_failed OR NOT torch2_version MATCHES "^2\\.")
    message(WARNING "tutti: ${torch2_python} does not import a torch 2.x ('${torch2_version}'); "
                    "no torch 2.x build (scripts/install-torch2.sh makes one)")
  else()
    set(TUTTI_HAVE_TORCH2 ON)
    set(TUTTI_TORCH2_PYTHON_EXECUTABLE ${torch2_python})
    set(TUTTI_TORCH2_VERSION ${torch2_version})
  endif()
endif()
message(STATUS "tutti: torch 2.x build ${TUTTI_HAVE_TORCH2} ${TUTTI_TORCH2_VERSION}")

if(TUTTI_HAVE_TORCH2)
  include(ExternalProject)
  set(torch2_launcher "")
  if(CCACHE_PROGRAM)
    # A list (env, ccache's settings, ccache): CMAKE_CACHE_ARGS keeps its semicolons.
    set(torch2_launcher "-DCMAKE_CXX_COMPILER_LAUNCHER:STRING=${TUTTI_CCACHE}")
  endif()
  # PyPI's torch is a CUDA build: its CMake package enables the CUDA language where nvcc exists,
  # and CMake 3.25 (Debian 12's, as shipped) cannot find a default architecture nvcc 13 accepts
  # ("Failed to detect a default CUDA architecture", a fresh Debian root's first full run). The
  # parent's compiler and architectures, which cmake/Cuda.cmake settled, go along.
  set(torch2_cuda "")
  if(TUTTI_HAVE_CUDA)
    set(torch2_cuda "-DCMAKE_CUDA_COMPILER:FILEPATH=${CMAKE_CUDA_COMPILER}"
                    "-DCMAKE_CUDA_ARCHITECTURES:STRING=${CMAKE_CUDA_ARCHITECTURES}")
  endif()
  ExternalProject_Add(torch2
    SOURCE_DIR ${PROJECT_SOURCE_DIR}/runtime/torch
    BINARY_DIR ${TUTTI_TORCH2_BUILD_DIR}
    CMAKE_GENERATOR ${CMAKE_GENERATOR}
    CMAKE_ARGS
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DPython3_EXECUTABLE=${TUTTI_TORCH2_PYTHON_EXECUTABLE}
      -DTUTTI_LIBRARY=$<TARGET_FILE:tutti>
      -DTUTTI_INCLUDE_DIR=${PROJECT_SOURCE_DIR}/runtime/include
      -DTUTTI_TORCH_CHECKS_SOURCE_DIR=${PROJECT_SOURCE_DIR}
    CMAKE_CACHE_ARGS ${torch2_cuda} ${torch2_launcher}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON
    USES_TERMINAL_BUILD ON
    DEPENDS tutti)
  set(TUTTI_TORCH2_PYTHON_BUILD_DIR ${TUTTI_TORCH2_BUILD_DIR}/python)
endif()
