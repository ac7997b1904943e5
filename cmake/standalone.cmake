# standalone.cmake: what comm/ and train/ set when they are built on their own (cmake -S comm,
# cmake -S train: on the GPU machine, with only a compiler and the CUDA toolkit): tests on,
# C11 with GNU extensions, a default build type, kernels/ beside them, the project's warnings.
# Included right after their project().
enable_testing()
set(CMAKE_C_STANDARD 11)
set(CMAKE_C_EXTENSIONS ON)
if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE RelWithDebInfo)
endif()
if(NOT TARGET gpool-kernels)
  add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../kernels ${CMAKE_CURRENT_BINARY_DIR}/kernels)
endif()
add_compile_options(-Wall -Wextra -Wshadow -Wno-unused-parameter -Werror)
add_compile_definitions(_GNU_SOURCE)
