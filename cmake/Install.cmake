# `cmake --install build --prefix P` lays out a tree that users (and the images in docker/) consume:
#   P/bin/      tuttirun, kubexec, tutti-hostfile, tutti-bench, tutti-demo
#   P/lib/      libtutti.so.<version> (soname libtutti.so.0), libtutti.a
#   P/include/  tutti/ (the whole public header folder, whatever it holds)
#   P/lib/cmake/tutti/  find_package(tutti): tutti::tutti (shared), tutti::tutti_static (when fmt
#                       is found, since the static archive needs it), tutti::tutti_torch (built
#                       with libtorch: libtutti_torch, when the same libtorch is found)
#   P/lib/pkgconfig/tutti.pc   pkg-config --cflags --libs tutti (--static for libtutti.a); its Libs
#                       carry an rpath to P/lib, so a program built with them runs as built
# Included last by the root CMakeLists.txt, so every target below already exists; the folders that
# define them keep no install logic of their own beyond their binaries' install(TARGETS ...).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(TUTTI_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/tutti)

# The libraries carry their source folder as an include directory; consumers of the installed tree
# must see the installed headers instead. Wrap whatever the library has in BUILD_INTERFACE (so a
# folder the runtime adds later still works in the build tree) and add the install's include/.
function(tutti_relocatable_includes target)
  get_target_property(dirs ${target} INTERFACE_INCLUDE_DIRECTORIES)
  set(wrapped "")
  if(dirs)
    foreach(dir IN LISTS dirs)
      list(APPEND wrapped "$<BUILD_INTERFACE:${dir}>")
    endforeach()
  endif()
  list(APPEND wrapped "$<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>")
  set_property(TARGET ${target} PROPERTY INTERFACE_INCLUDE_DIRECTORIES "${wrapped}")
endfunction()
tutti_relocatable_includes(tutti)
tutti_relocatable_includes(tutti_static)

# Installed programs find libtutti.so next door (P/lib), wherever P is: /usr/local in the images,
# a temporary prefix in the install test.
set(TUTTI_INSTALLED_PROGRAMS tuttirun kubexec tutti-hostfile tutti-bench tutti-demo)
set_target_properties(${TUTTI_INSTALLED_PROGRAMS} PROPERTIES
  INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
if(TUTTI_HAVE_CUDA)
  # tutti-bench calls NCCL itself (--baseline nccl): its RUNPATH names libnccl's folder too, as
  # libtutti's does, since that folder is rarely on the loader's path.
  set_target_properties(tutti-bench PROPERTIES
    INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR};${TUTTI_NCCL_LIBRARY_DIR}")
endif()
# tuttirun, kubexec, tutti-hostfile and tutti-bench install themselves (their CMakeLists.txt).
install(TARGETS tutti-demo RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})

install(TARGETS tutti EXPORT tuttiTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS tutti_static EXPORT tuttiStaticTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/runtime/include/tutti
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

# With CUDA, libtutti.a also needs the static CUDA runtime (and what it uses: dl, rt) and libnccl.
set(TUTTI_PC_LIBS_PRIVATE_CUDA "")
set(TUTTI_CUDA_ROOT "")
if(TUTTI_HAVE_CUDA)
  set(TUTTI_PC_LIBS_PRIVATE_CUDA
      " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lrt -L${TUTTI_NCCL_LIBRARY_DIR} -lnccl")
  get_filename_component(TUTTI_CUDA_ROOT ${CUDAToolkit_BIN_DIR} DIRECTORY)
endif()
install(EXPORT tuttiTargets NAMESPACE tutti:: DESTINATION ${TUTTI_CMAKE_DIR})
install(EXPORT tuttiStaticTargets NAMESPACE tutti:: DESTINATION ${TUTTI_CMAKE_DIR})
# libtutti_torch (runtime/torch/cpp puts it in the export set tuttiTorchTargets): tutti::tutti_torch,
# which tuttiConfig.cmake offers only with the libtorch it was built against (its version and
# folder, recorded here).
set(TUTTI_TORCH_VERSION "")
set(TUTTI_TORCH_DIR "")
if(TARGET tutti_torch)
  install(EXPORT tuttiTorchTargets NAMESPACE tutti:: DESTINATION ${TUTTI_CMAKE_DIR})
  set(TUTTI_TORCH_VERSION "${Torch_VERSION}")
  set(TUTTI_TORCH_DIR "${Torch_DIR}")
endif()
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/tuttiConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/tuttiConfig.cmake INSTALL_DESTINATION ${TUTTI_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/tuttiConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tuttiConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/tuttiConfigVersion.cmake
  DESTINATION ${TUTTI_CMAKE_DIR})

# pkg-config: prefix is computed from the .pc file's own place (pcfiledir), so the tree can move.
# Libs name libdir as an rpath too (-Wl,-rpath,P/lib/pkgconfig/../../lib, wherever P then is): a
# program built with `pkg-config --libs tutti` runs with no LD_LIBRARY_PATH, as one built with
# find_package(tutti) does (CMake adds the rpath there).
# With MPI, a static link also needs Open MPI's libraries (its pkg-config module is ompi-c).
set(TUTTI_PC_REQUIRES_PRIVATE "")
if(TUTTI_HAVE_MPI)
  set(TUTTI_PC_REQUIRES_PRIVATE "Requires.private: ompi-c")
endif()
configure_file(${CMAKE_CURRENT_LIST_DIR}/tutti.pc.in ${CMAKE_CURRENT_BINARY_DIR}/tutti.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/tutti.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
