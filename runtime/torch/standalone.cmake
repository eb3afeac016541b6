# The set-up runtime/torch needs when it is built as a project of its own (see CMakeLists.txt):
# tutti as tutti::tutti, the torch that Python3_EXECUTABLE imports, and the variables the root
# build would have set (TUTTI_HAVE_TORCH_PYTHON, TUTTI_PYTHON_BUILD_DIR, TUTTI_PYTHON_INSTALL_DIR).
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/Standalone.cmake)
set(CMAKE_RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/bin)
set(CMAKE_LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)

# The torch is the one this Python imports: its wheel carries libtorch's headers, libraries and
# CMake package (torch.utils.cmake_prefix_path).
find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c "import torch, torch.utils; print(torch.utils.cmake_prefix_path)"
  OUTPUT_VARIABLE torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE RESULT_VARIABLE torch_missing)
if(torch_missing)
  message(FATAL_ERROR "tutti_torch: ${Python3_EXECUTABLE} cannot import torch; install torch into "
                      "that Python (pip install torch) or name another with -DPython3_EXECUTABLE")
endif()
# The torch package folder goes first too: TorchConfig looks for some libraries (c10) by name, and
# a machine with Debian's libtorch-dev would otherwise hand it /usr/lib's libc10.so.1.13, two
# torches in one process.
get_filename_component(torch_package_dir ${torch_prefix}/../.. ABSOLUTE)
list(PREPEND CMAKE_PREFIX_PATH ${torch_package_dir} ${torch_prefix})
# A CUDA wheel's TorchConfig finds the toolkit when there is one and asks the GPU for its
# architecture by compiling and running a probe (which fails without a GPU, and with CMake 3.25
# before it runs). Nothing here is compiled for the GPU, so name an architecture and skip the probe.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
# Its enable_language(CUDA) needs an architecture too, which Debian 12's CMake 3.25 cannot find on
# its own for nvcc 13 ("Failed to detect a default CUDA architecture"): any one nvcc takes will do.
if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT DEFINED ENV{CUDAARCHS})
  set(CMAKE_CUDA_ARCHITECTURES 75)
endif()
# And nvcc itself, which a toolkit outside PATH (/usr/local/cuda, where NVIDIA installs it) hides
# from enable_language ("No CMAKE_CUDA_COMPILER could be found": pip install . in a fresh Debian
# root). Looked for as cmake/Cuda.cmake does.
if(NOT DEFINED CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX})
  find_program(TUTTI_NVCC nvcc HINTS ENV CUDA_HOME ENV CUDA_PATH PATH_SUFFIXES bin
               PATHS /usr/local/cuda/bin)
  if(TUTTI_NVCC)
    set(CMAKE_CUDA_COMPILER ${TUTTI_NVCC})
  endif()
endif()
find_package(Torch REQUIRED)
find_library(TUTTI_TORCH_PYTHON_LIBRARY torch_python PATHS ${TORCH_INSTALL_PREFIX}/lib NO_DEFAULT_PATH
             REQUIRED)
set(TUTTI_HAVE_TORCH ON)
set(TUTTI_HAVE_TORCH_PYTHON ON)
message(STATUS "tutti_torch: torch ${Torch_VERSION} from ${TORCH_INSTALL_PREFIX}, tutti ${tutti_library_file}")

set(TUTTI_PYTHON_BUILD_DIR ${CMAKE_BINARY_DIR}/python CACHE PATH
    "Where the build tree holds the importable Python package tutti")
