# libtutti once more against each MPI that scripts/install-mpis.sh put in TUTTI_MPIS_DIR (Open MPI 5,
# MPICH 5, Intel MPI), for the MPI matrix's tests (tests/integration/mpis): an MPI program must be
# built with the MPI that runs it, and MPICH's and Intel MPI's ABI is not Open MPI's. Each is a build
# of this same source tree with only the MPI changed and only what the tests run (libtutti and
# mpi_allreduce_check), in a folder beside this build's: at the same depth, every file that does not
# include <mpi.h> is a ccache hit of this build's (about 20 s each).
#
# The build against MPI <name> is in ${TUTTI_MPIS_BUILD_PREFIX}<name>, its MPI in
# ${TUTTI_MPIS_DIR}/<name> (tests/integration/mpis looks there).
set(TUTTI_MPIS_DIR "$ENV{HOME}/.cache/tutti/mpis" CACHE PATH
    "Where scripts/install-mpis.sh put the PyPI MPIs (one venv each)")
set(TUTTI_MPI_MATRIX AUTO CACHE STRING "Build libtutti against each MPI in TUTTI_MPIS_DIR (ON|OFF|AUTO)")

set(TUTTI_MPIS_BUILD_PREFIX ${CMAKE_BINARY_DIR}-mpi-)
set(mpis_found "")
# Not in a sanitizer build (the matrix's tests run from the release build only), nor where it is
# turned off (these builds themselves turn it off).
if(TUTTI_MPI_MATRIX STREQUAL "OFF" OR TUTTI_SANITIZE)
  return()
endif()

include(ExternalProject)
foreach(name openmpi5 mpich impi)
  set(prefix ${TUTTI_MPIS_DIR}/${name})
  if(NOT EXISTS ${prefix}/bin/mpicc)
    if(TUTTI_MPI_MATRIX STREQUAL "ON")
      message(FATAL_ERROR "tutti: TUTTI_MPI_MATRIX=ON but ${prefix} has no MPI "
                          "(scripts/install-mpis.sh installs it)")
    endif()
    continue()
  endif()
  set(build_dir ${TUTTI_MPIS_BUILD_PREFIX}${name})
  set(launcher "")
  if(CCACHE_PROGRAM)
    set(launcher "-DCMAKE_CXX_COMPILER_LAUNCHER:STRING=${TUTTI_CCACHE}"
                 "-DCMAKE_C_COMPILER_LAUNCHER:STRING=${TUTTI_CCACHE}")
  endif()
  # Intel's mpicc finds its own folder only through I_MPI_ROOT; the others ignore it.
  ExternalProject_Add(mpi_${name}
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${build_dir}
    CMAKE_COMMAND ${CMAKE_COMMAND} -E env I_MPI_ROOT=${prefix} ${CMAKE_COMMAND}
    CMAKE_GENERATOR ${CMAKE_GENERATOR}
    CMAKE_ARGS
      -DCMAKE_BUILD_TYPE=${CMAKE_BUILD_TYPE}
      -DCMAKE_C_COMPILER=${CMAKE_C_COMPILER}
      -DCMAKE_CXX_COMPILER=${CMAKE_CXX_COMPILER}
      -DMPI_C_COMPILER=${prefix}/bin/mpicc
      -DTUTTI_WITH_MPI=ON
      -DTUTTI_MPI_MATRIX=OFF
      -DTUTTI_WITH_TORCH=OFF
      -DTUTTI_WITH_PYTHON=OFF
      -DTUTTI_WITH_GLOO=OFF
      -DTUTTI_WITH_CUDA=OFF
    CMAKE_CACHE_ARGS ${launcher}
    BUILD_COMMAND ${CMAKE_COMMAND} -E env I_MPI_ROOT=${prefix}
                  ${CMAKE_COMMAND} --build . --target tutti mpi_allreduce_check
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON
    USES_TERMINAL_BUILD ON
    # After this build's libtutti: from an empty ccache, compiling beside it would miss on every
    # file instead of hitting on all but the MPI ones.
    DEPENDS tutti)
  list(APPEND mpis_found ${name})
endforeach()
message(STATUS "tutti: MPI matrix builds: ${mpis_found} (from ${TUTTI_MPIS_DIR})")
