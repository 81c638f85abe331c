# The WebAssembly build (docs/web.md), with Debian's emscripten: the library and the C API compiled to one
# module, DIR/lstmlm.js + DIR/lstmlm.wasm, with the JavaScript API (web/api.js) and its TypeScript
# declarations beside them. scripts/build-wasm configures it (emcmake cmake); CMakeLists.txt includes this
# file instead of its native targets. No ICU, SentencePiece or zlib (emscripten has them only as ports it
# downloads): the modes and models that need them are refused with a message. No threads: an engine runs on
# one. fp32 kernels on SIMD128 (src/kernels/{fp32,cells}/wasm.cpp: a multiply then an add, the WebAssembly
# bit set), int8's on SIMD128 (int8/wasm.cpp, exact sums: the native bits);
# everything else, and the kernels LSTMLM_ISA=scalar selects, plain code (LSTMLM_SIMD_SCALAR) with an fma
# rounded once (src/kernels/fma.hpp): the bits of the native build.
include(cmake/tensor_names.cmake)

file(GLOB_RECURSE LSTMLM_WASM_SOURCES CONFIGURE_DEPENDS src/*.cpp)
list(FILTER LSTMLM_WASM_SOURCES EXCLUDE REGEX "/src/server/")
# Only the plain-code kernel files: every other one is an x86-64 or aarch64 ISA's.
list(FILTER LSTMLM_WASM_SOURCES EXCLUDE REGEX
  "/src/kernels/(fp32|cells|bf16|int8)/(avx2|avx512|avx512bf16|amx|avxvnni|vnni|neon|dotprod|i8mm)\\.cpp$")

# The header-only libraries, from Debian's packages: Eigen's own directory, and nlohmann_json through a
# directory of its own (adding /usr/include would put glibc's headers before emscripten's libc).
set(LSTMLM_WASM_THIRD_PARTY ${CMAKE_CURRENT_BINARY_DIR}/third-party)
file(MAKE_DIRECTORY ${LSTMLM_WASM_THIRD_PARTY})
file(CREATE_LINK /usr/include/nlohmann ${LSTMLM_WASM_THIRD_PARTY}/nlohmann SYMBOLIC)

# -msimd128 lets the compiler vectorize the plain-code kernels' 16-lane loops (about 1.3x here): vectorizing
# never reorders a floating-point operation, so the bits stay the native ones (tests/wasm).
set(LSTMLM_WASM_FLAGS -fwasm-exceptions -ffp-contract=off -msimd128)
add_executable(lstmlm_wasm ${LSTMLM_WASM_SOURCES})
# The kernel variants name themselves with a macro (simd.hpp): each file is a unit of its own. Only the
# SIMD128 ones leave plain code (LSTMLM_SIMD_WASM).
set_source_files_properties(src/kernels/fp32/scalar.cpp src/kernels/cells/scalar.cpp PROPERTIES
  SKIP_UNITY_BUILD_INCLUSION ON)
set_source_files_properties(src/kernels/fp32/wasm.cpp src/kernels/cells/wasm.cpp PROPERTIES
  SKIP_UNITY_BUILD_INCLUSION ON COMPILE_DEFINITIONS LSTMLM_SIMD_WASM)
# int8's SIMD128 kernel (exact int32 sums: int8's native bits) names its intrinsics itself.
set_source_files_properties(src/kernels/int8/wasm.cpp PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
set_target_properties(lstmlm_wasm PROPERTIES OUTPUT_NAME lstmlm SUFFIX ".js" UNITY_BUILD ON
  UNITY_BUILD_BATCH_SIZE 8 RUNTIME_OUTPUT_DIRECTORY ${LSTMLM_WASM_OUT})
target_include_directories(lstmlm_wasm PRIVATE include src ${LSTMLM_GENERATED_INCLUDE_DIR})
target_include_directories(lstmlm_wasm SYSTEM PRIVATE /usr/include/eigen3 ${LSTMLM_WASM_THIRD_PARTY})
target_compile_options(lstmlm_wasm PRIVATE -Wall -Wextra ${LSTMLM_WASM_FLAGS}
  "SHELL:-include ${CMAKE_CURRENT_SOURCE_DIR}/web/compat/libcxx.hpp")
if(LSTMLM_WERROR)
  target_compile_options(lstmlm_wasm PRIVATE -Werror)
endif()
target_compile_definitions(lstmlm_wasm PRIVATE LSTMLM_SIMD_SCALAR LSTMLM_NO_ICU LSTMLM_NO_SENTENCEPIECE
  LSTMLM_NO_ZLIB EIGEN_DONT_PARALLELIZE LSTMLM_BUILD_KIND="wasm32" LSTMLM_VERSION="${PROJECT_VERSION}")

# The C API's functions (include/lstmlm/lstmlm.h) are the module's exports; web/api.js wraps them.
file(READ include/lstmlm/lstmlm.h LSTMLM_WASM_HEADER)
string(REGEX MATCHALL "LSTMLM_API [^;]*[ *](lstmlm_[a-z0-9_]+)\\(" LSTMLM_WASM_DECLS "${LSTMLM_WASM_HEADER}")
# setenv and unsetenv: load's isa option is LSTMLM_ISA for the length of the load (web/api.js).
set(LSTMLM_WASM_EXPORTS _malloc _free _setenv _unsetenv)
foreach(decl ${LSTMLM_WASM_DECLS})
  string(REGEX REPLACE ".*[ *](lstmlm_[a-z0-9_]+)\\($" "_\\1" name "${decl}")
  list(APPEND LSTMLM_WASM_EXPORTS ${name})
endforeach()
list(JOIN LSTMLM_WASM_EXPORTS "," LSTMLM_WASM_EXPORTS)
set_property(TARGET lstmlm_wasm APPEND PROPERTY LINK_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/web/api.js)
target_link_options(lstmlm_wasm PRIVATE ${LSTMLM_WASM_FLAGS}
  "SHELL:-s MODULARIZE=1" "SHELL:-s EXPORT_NAME=lstmlmModule" "SHELL:-s ENVIRONMENT=web,worker,node"
  "SHELL:-s NODEJS_CATCH_EXIT=0" "SHELL:-s NODEJS_CATCH_REJECTION=0" "SHELL:-s ALLOW_MEMORY_GROWTH=1" "SHELL:-s MAXIMUM_MEMORY=4GB" "SHELL:-s FORCE_FILESYSTEM=1"
  "SHELL:-s EXPORTED_FUNCTIONS=${LSTMLM_WASM_EXPORTS}"
  "SHELL:-s EXPORTED_RUNTIME_METHODS=FS,UTF8ToString,stringToUTF8,lengthBytesUTF8,getValue,setValue"
  "SHELL:--extern-post-js ${CMAKE_CURRENT_SOURCE_DIR}/web/api.js")

# The package folder's other files.
configure_file(web/package.json.in ${LSTMLM_WASM_OUT}/package.json @ONLY)
configure_file(web/lstmlm.d.ts ${LSTMLM_WASM_OUT}/lstmlm.d.ts COPYONLY)
# The serverless page (docs/web.md): page/index.html, its model in page/model/.
configure_file(web/page/index.html ${LSTMLM_WASM_OUT}/page/index.html COPYONLY)

# The check of kernels::fma_rn against x86-64's fma (tests/wasm/fma.test.js runs it): one file, its wasm
# inside (SINGLE_FILE), in the objects' directory.
add_executable(lstmlm_wasm_fma_check tests/wasm/fma_check.cpp)
target_include_directories(lstmlm_wasm_fma_check PRIVATE src)
target_compile_options(lstmlm_wasm_fma_check PRIVATE -Wall -Wextra -Werror)
set_target_properties(lstmlm_wasm_fma_check PROPERTIES OUTPUT_NAME fma_check SUFFIX ".js")
target_link_options(lstmlm_wasm_fma_check PRIVATE "SHELL:-s SINGLE_FILE=1" "SHELL:-s ENVIRONMENT=node")

# The normalize modes without ICU (tests/wasm/normalize.test.js runs it).
add_executable(lstmlm_wasm_normalize_check tests/wasm/normalize_check.cpp src/model/normalize.cpp
  src/model/unicode.cpp src/model/lowercase_table.cpp src/base/text.cpp)
target_include_directories(lstmlm_wasm_normalize_check PRIVATE include src)
target_compile_definitions(lstmlm_wasm_normalize_check PRIVATE LSTMLM_NO_ICU)
target_compile_options(lstmlm_wasm_normalize_check PRIVATE -Wall -Wextra -Werror -fwasm-exceptions)
set_target_properties(lstmlm_wasm_normalize_check PROPERTIES OUTPUT_NAME normalize_check SUFFIX ".js")
target_link_options(lstmlm_wasm_normalize_check PRIVATE -fwasm-exceptions "SHELL:-s SINGLE_FILE=1"
  "SHELL:-s ENVIRONMENT=node")
