// std::hash for sets used as keys of unordered containers (the standard library has none), for the
// dictionaries tests/rootdump.py generates: XOR of the element hashes, independent of the iteration order
// as set equality is.  Copied into the dictionary cache and compiled into the dictionaries by ACLiC.
#ifndef RNTUPLE_ROOTDUMP_HASH_H
#define RNTUPLE_ROOTDUMP_HASH_H
#include <cstddef>
#include <functional>
#include <set>
#include <unordered_set>

namespace rntuple_rootdump {
template <typename Set>
std::size_t XorHash(const Set &s) noexcept
{
   std::size_t h = 0;
   for (const auto &x : s)
      h ^= std::hash<typename Set::value_type>{}(x);
   return h;
}
} // namespace rntuple_rootdump

namespace std {
template <typename T, typename H, typename E, typename A>
struct hash<unordered_set<T, H, E, A>> {
   size_t operator()(const unordered_set<T, H, E, A> &s) const noexcept
   {
      return rntuple_rootdump::XorHash(s);
   }
};
template <typename T, typename H, typename E, typename A>
struct hash<unordered_multiset<T, H, E, A>> {
   size_t operator()(const unordered_multiset<T, H, E, A> &s) const noexcept
   {
      return rntuple_rootdump::XorHash(s);
   }
};
template <typename T, typename C, typename A>
struct hash<set<T, C, A>> {
   size_t operator()(const set<T, C, A> &s) const noexcept
   {
      return rntuple_rootdump::XorHash(s);
   }
};
template <typename T, typename C, typename A>
struct hash<multiset<T, C, A>> {
   size_t operator()(const multiset<T, C, A> &s) const noexcept
   {
      return rntuple_rootdump::XorHash(s);
   }
};
} // namespace std
#endif
