# Sourced by run.sh and seed.sh: the environment of every fuzz build and run.
#
# cargo fuzz instruments the Rust code with AddressSanitizer, and the cc crate then
# compiles the C libraries (zstd, xz, lz4, zlib) with -fsanitize=address too. GCC's
# use-after-scope instrumentation, run against rustc's (LLVM's) sanitizer runtime,
# reports a false positive inside zstd's compressor (ZSTD_selectBtGetAllMatches reads a
# local constant table that GCC placed in global memory); it is turned off for the C
# code only. Every other check stays on.
export CFLAGS="-fno-sanitize-address-use-after-scope"
