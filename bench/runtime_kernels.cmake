# cleave's oneDNN kernels against bare oneDNN (bench/runtime_kernels.cc).
find_package(OpenMP REQUIRED)
add_executable(runtime_kernels ${CMAKE_CURRENT_LIST_DIR}/runtime_kernels.cc)
target_link_libraries(runtime_kernels PRIVATE cleave_runtime OpenMP::OpenMP_CXX)
set_target_properties(runtime_kernels PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bench)
