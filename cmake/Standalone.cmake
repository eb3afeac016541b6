# What runtime/torch and runtime/python need when they are built as projects of their own (the torch
# 2.x sub-build, pip install .): tutti's compiler settings, and tutti as tutti::tutti, from a build
# tree (TUTTI_LIBRARY + TUTTI_INCLUDE_DIR) or an installed prefix (find_package(tutti));
# TUTTI_LIBRARY_DIR is the folder of its libtutti.so. Included once per project.
include_guard(GLOBAL)
set(CMAKE_CXX_STANDARD 20)
set(CMAKE_CXX_STANDARD_REQUIRED ON)
set(CMAKE_CXX_EXTENSIONS OFF)
set(CMAKE_POSITION_INDEPENDENT_CODE ON)
add_compile_options(-Wall -Wextra -Werror)
# g++ 12 and 13's false -Wrestrict in std::string's operator+ at -O3 (GCC bug 105329), as in tutti.
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 14)
  add_compile_options(-Wno-error=restrict)
endif()

set(TUTTI_LIBRARY "" CACHE FILEPATH "libtutti.so of a tutti build tree (else find_package(tutti))")
set(TUTTI_INCLUDE_DIR "" CACHE PATH "tutti's public headers (runtime/include) for TUTTI_LIBRARY")
if(TUTTI_LIBRARY)
  add_library(tutti::tutti SHARED IMPORTED)
  set_target_properties(tutti::tutti PROPERTIES IMPORTED_LOCATION ${TUTTI_LIBRARY}
                        INTERFACE_INCLUDE_DIRECTORIES ${TUTTI_INCLUDE_DIR})
else()
  # COMPONENTS shared: libtutti only. The installed package would otherwise also look for the
  # libtorch its own libtutti_torch was built against, a second torch beside the one this project
  # builds against.
  find_package(tutti 0.1 CONFIG REQUIRED COMPONENTS shared)
endif()
get_target_property(tutti_library_file tutti::tutti LOCATION)
get_filename_component(TUTTI_LIBRARY_DIR ${tutti_library_file} DIRECTORY)
