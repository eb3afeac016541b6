# The set-up runtime/python needs when it is built as a project of its own (see CMakeLists.txt):
# tutti as tutti::tutti, Python 3 and pybind11, and the variables the root build would have set
# (TUTTI_PYTHON_BUILD_DIR, TUTTI_LIBRARY_DIR); TUTTI_PYTHON_WITH_TORCH when that Python has torch.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/Standalone.cmake)

find_package(Python3 REQUIRED COMPONENTS Interpreter Development.Module)
# pybind11 from the building Python (pip install pybind11), else one CMake finds (pybind11-dev).
execute_process(COMMAND ${Python3_EXECUTABLE} -c "import pybind11; print(pybind11.get_cmake_dir())"
                OUTPUT_VARIABLE pybind11_cmake_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(pybind11_cmake_dir)
  list(PREPEND CMAKE_PREFIX_PATH ${pybind11_cmake_dir})
endif()
find_package(pybind11 CONFIG REQUIRED)

set(TUTTI_PYTHON_BUILD_DIR ${CMAKE_BINARY_DIR}/python CACHE PATH
    "Where the build tree holds the importable Python package tutti")
option(TUTTI_PYTHON_WITH_TORCH "Also build tutti.torch when this Python imports torch" ON)
if(TUTTI_PYTHON_WITH_TORCH)
  execute_process(COMMAND ${Python3_EXECUTABLE} -c "import torch"
                  RESULT_VARIABLE torch_missing OUTPUT_QUIET ERROR_QUIET)
  if(torch_missing)
    set(TUTTI_PYTHON_WITH_TORCH OFF)
  endif()
endif()
message(STATUS "tutti_python: ${Python3_EXECUTABLE}, tutti ${tutti_library_file}, tutti.torch "
               "${TUTTI_PYTHON_WITH_TORCH}")
