# Cross-compiling Kindle's C++ library and tests for 64-bit Arm (Debian's g++-aarch64-linux-gnu),
# run under user-mode QEMU (Debian's qemu-user) — scripts/test.sh's portability stage:
#   cmake -S . -B build/aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
# The target's libraries come from Debian's arm64 packages (dpkg --add-architecture arm64;
# libopenblas-openmp-dev:arm64 libsleef-dev:arm64 libgtest-dev:arm64 libstdc++6:arm64 libgomp1:arm64),
# installed under the multiarch folders.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
# Headers and libraries only from the target's folders; programs (Python, the generators) from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# ... but never the host's own libraries (x86-64 ones such as Gloo's lie directly in /usr/lib).
set(CMAKE_IGNORE_PATH /usr/lib /lib /usr/local/lib)
# ctest runs the test programs through QEMU with the target's run-time libraries from Debian's arm64
# packages (libc6, libstdc++6, libgomp1: the multiarch folders; the cross toolchain's own copies in
# /usr/aarch64-linux-gnu hung at the first thread start under QEMU here) and OpenBLAS's OpenMP
# build (its pthreads build hangs under QEMU as it starts its threads).
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64;-E;LD_LIBRARY_PATH=/usr/lib/aarch64-linux-gnu/openblas-openmp)
