# Cross build for aarch64 Linux with Debian's g++-aarch64-linux-gnu (scripts/cross-aarch64, docs/arm.md):
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The arm64 libraries lstmlm links (ICU, SentencePiece, cpp-httplib and what it needs, zlib; GoogleTest for
# the tests) are Debian's arm64 packages unpacked into LSTMLM_AARCH64_SYSROOT (default: build-aarch64-sysroot
# in the source root) by `LSTMLM_WITH_AARCH64=1 scripts/install-deps`; the header-only ones (Eigen, CLI11,
# nlohmann-json) are the host's. Programs and tests run under qemu-user (ctest through
# CMAKE_CROSSCOMPILING_EMULATOR), the C library from the cross compiler's /usr/aarch64-linux-gnu, the rest
# found through the build tree's RUNPATH.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)

if(NOT LSTMLM_AARCH64_SYSROOT)
  if(DEFINED ENV{LSTMLM_AARCH64_SYSROOT})
    set(LSTMLM_AARCH64_SYSROOT "$ENV{LSTMLM_AARCH64_SYSROOT}")
  else()
    get_filename_component(LSTMLM_AARCH64_SYSROOT "${CMAKE_CURRENT_LIST_DIR}/../build-aarch64-sysroot" ABSOLUTE)
  endif()
endif()
set(LSTMLM_AARCH64_SYSROOT "${LSTMLM_AARCH64_SYSROOT}" CACHE PATH "arm64 libraries unpacked by scripts/install-deps")
# try_compile projects see the variable too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES LSTMLM_AARCH64_SYSROOT)
if(NOT EXISTS "${LSTMLM_AARCH64_SYSROOT}/usr/include/sentencepiece_processor.h")
  message(FATAL_ERROR "lstmlm: no arm64 libraries in ${LSTMLM_AARCH64_SYSROOT}: run LSTMLM_WITH_AARCH64=1 scripts/install-deps")
endif()

# The arm64 libraries first, then the cross compiler's C library, then the host for the header-only
# packages (a library is looked for under lib/aarch64-linux-gnu, which the host does not have).
set(CMAKE_FIND_ROOT_PATH "${LSTMLM_AARCH64_SYSROOT}" /usr/aarch64-linux-gnu /)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config (cpp-httplib) reads the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_LIBDIR} "${LSTMLM_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${LSTMLM_AARCH64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${LSTMLM_AARCH64_SYSROOT}")
set(ENV{PKG_CONFIG_PATH} "")

# Debian's multiarch headers (openssl/opensslconf.h) as system headers, after the others.
set(CMAKE_C_FLAGS_INIT "-idirafter ${LSTMLM_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu")
set(CMAKE_CXX_FLAGS_INIT "-idirafter ${LSTMLM_AARCH64_SYSROOT}/usr/include/aarch64-linux-gnu")
# The libraries linked by name (-licuuc, -lsentencepiece, -lz) from the sysroot too, and the build tree's
# programs find them there when run, with what they need in turn (an RPATH, which unlike a RUNPATH also
# serves libicuuc's libicudata); an installed or packaged lstmlm finds Debian's, on an arm64 system.
set(LSTMLM_AARCH64_LIBDIR "${LSTMLM_AARCH64_SYSROOT}/usr/lib/aarch64-linux-gnu")
foreach(kind EXE SHARED MODULE)
  set(CMAKE_${kind}_LINKER_FLAGS_INIT
      "-L${LSTMLM_AARCH64_LIBDIR} -Wl,-rpath-link,${LSTMLM_AARCH64_LIBDIR} -Wl,--disable-new-dtags")
endforeach()
set(CMAKE_BUILD_RPATH "${LSTMLM_AARCH64_LIBDIR}")

set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64 -L /usr/aarch64-linux-gnu)
