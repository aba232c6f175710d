// SplitMix64, the one pseudo-random step the C++ generators share (tests/cxx/rootgen.hxx,
// tests/cxx/layoutgen.hxx): declared into cling before them by tests/rootdump.py's
// declare_cxx. Values depend on it only through the seeds each generator gives.
#pragma once
#include <cstdint>

namespace rntuple_testgen {

/// Advances `state` by one step and returns the next 64 random bits.
inline std::uint64_t SplitMix64(std::uint64_t &state)
{
   std::uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
   z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
   z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
   return z ^ (z >> 31);
}

} // namespace rntuple_testgen
