# Built on its own against another torch (cmake/Torch2.cmake passes TUTTI_TORCH_CHECKS_SOURCE_DIR,
# the tutti source tree), runtime/torch also builds the C++ programs that test the binding on that
# torch: tests/integration/torch_binding's torch_binding_check and examples/fashion_mnist's
# trainer. The tutti build registers their tests (tests/integration/torch_binding).
#
# fmt: PyPI's torch carries fmt 12's headers in its include folder, which come before Debian's fmt 9
# there; the programs use them header-only rather than link Debian's libfmt.so.9 against fmt 12's
# declarations.
set(TUTTI_TORCH_CHECKS_SOURCE_DIR "" CACHE PATH "tutti's source tree: build its torch checks too")
if(NOT TUTTI_TORCH_CHECKS_SOURCE_DIR)
  return()
endif()
find_package(ZLIB REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
set(fmnist ${TUTTI_TORCH_CHECKS_SOURCE_DIR}/examples/fashion_mnist)

function(tutti_torch_fmt target)
  if(EXISTS ${TORCH_INSTALL_PREFIX}/include/fmt/format.h)
    target_include_directories(${target} SYSTEM PRIVATE ${TORCH_INSTALL_PREFIX}/include)
    target_compile_definitions(${target} PRIVATE FMT_HEADER_ONLY)
  else()
    find_package(fmt REQUIRED)
    target_link_libraries(${target} PRIVATE fmt::fmt)
  endif()
endfunction()

# A CUDA wheel's libtorch_cuda needs the NCCL of the wheel's nvidia-nccl package, newer than the one
# libtutti's RUNPATH names (/usr/local/cuda's, say): the linker must check libtorch_cuda's symbols
# against the wheel's. At run time the libraries share one libnccl.so.2 (the newer), as in Python.
execute_process(
  COMMAND ${Python3_EXECUTABLE} -c
          "import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], 'lib'))"
  OUTPUT_VARIABLE wheel_nccl_dir OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
if(wheel_nccl_dir AND EXISTS ${wheel_nccl_dir}/libnccl.so.2)
  add_link_options(-Wl,-rpath-link,${wheel_nccl_dir})
  set(CMAKE_BUILD_RPATH ${wheel_nccl_dir})
endif()

add_library(fashion_mnist_data STATIC ${fmnist}/idx.cc ${fmnist}/checkpoint_file.cc)
target_include_directories(fashion_mnist_data PUBLIC ${fmnist})
target_link_libraries(fashion_mnist_data PUBLIC tutti::tutti ZLIB::ZLIB)
tutti_torch_fmt(fashion_mnist_data)
add_executable(fashion_mnist ${fmnist}/main.cc ${fmnist}/model.cc ${fmnist}/checkpoint.cc)
target_link_libraries(fashion_mnist PRIVATE tutti_torch fashion_mnist_data CLI11::CLI11)
tutti_torch_fmt(fashion_mnist)

add_executable(torch_binding_check
  ${TUTTI_TORCH_CHECKS_SOURCE_DIR}/tests/integration/torch_binding/torch_binding_check.cc)
target_link_libraries(torch_binding_check PRIVATE tutti_torch)
tutti_torch_fmt(torch_binding_check)

add_executable(elastic_state_check
  ${TUTTI_TORCH_CHECKS_SOURCE_DIR}/tests/integration/torch_binding/elastic_state_check.cc)
target_link_libraries(elastic_state_check PRIVATE tutti_torch)
