// IndexedOrderedMap: the object type of OrderedJson. Keeps keys in insertion order (as
// nlohmann::ordered_map does, so prompts render tool schemas in the client's key order) but finds
// keys through a hash index once an object has kMinIndexed keys, so parsing and lookups are
// linear in the width of an object, not quadratic (a 1 MB body with 125k distinct keys parses in
// milliseconds instead of tens of seconds).
//
// Contract: the same interface and semantics as nlohmann::ordered_map (what basic_json calls:
// emplace, operator[], at, find, count, erase, insert, clear). The index holds positions into
// the vector, rebuilt after an erase (O(n); erase is rare in request handling). If the vector is
// mutated behind the index's back (a std::vector member not overridden here), the index's size
// no longer matches and lookups fall back to a linear scan until the next indexed mutation
// rebuilds it: slower, never wrong. Const lookups never modify the index (safe to share read-only
// between threads).
// Hashing: std::hash of the key bytes (not keyed per process); crafted collisions can at worst
// make lookups linear again, as before this type.
#pragma once

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace dss {

template <class Key, class T, class IgnoredLess = std::less<Key>,
          class Allocator = std::allocator<std::pair<const Key, T>>>
struct IndexedOrderedMap : std::vector<std::pair<const Key, T>, Allocator> {
  using key_type = Key;
  using mapped_type = T;
  using Container = std::vector<std::pair<const Key, T>, Allocator>;
  using iterator = typename Container::iterator;
  using const_iterator = typename Container::const_iterator;
  using size_type = typename Container::size_type;
  using value_type = typename Container::value_type;
  using key_compare = std::equal_to<>;

  // Objects smaller than this are searched linearly (faster than hashing at that size).
  static constexpr size_t kMinIndexed = 16;

  IndexedOrderedMap() noexcept(noexcept(Container())) : Container{} {}
  explicit IndexedOrderedMap(const Allocator& alloc) noexcept(noexcept(Container(alloc)))
      : Container{alloc} {}
  template <class It>
  IndexedOrderedMap(It first, It last, const Allocator& alloc = Allocator()) : Container{alloc} {
    insert(first, last);
  }
  IndexedOrderedMap(std::initializer_list<value_type> init, const Allocator& alloc = Allocator())
      : Container{alloc} {
    insert(init.begin(), init.end());
  }

  template <class KeyType>
  std::pair<iterator, bool> emplace(KeyType&& key, T&& t) {
    if (const size_t pos = lookup(key); pos != kNotFound) return {this->begin() + pos, false};
    Container::emplace_back(std::forward<KeyType>(key), std::forward<T>(t));
    index_last();
    return {std::prev(this->end()), true};
  }

  template <class KeyType>
  T& operator[](KeyType&& key) {
    return emplace(std::forward<KeyType>(key), T{}).first->second;
  }
  template <class KeyType>
  const T& operator[](KeyType&& key) const {
    return at(std::forward<KeyType>(key));
  }

  template <class KeyType>
  T& at(KeyType&& key) {
    const size_t pos = lookup(key);
    if (pos == kNotFound) throw std::out_of_range("key not found");
    return (*this)[pos].second;
  }
  template <class KeyType>
  const T& at(KeyType&& key) const {
    const size_t pos = lookup(key);
    if (pos == kNotFound) throw std::out_of_range("key not found");
    return Container::operator[](pos).second;
  }

  template <class KeyType>
  size_type count(KeyType&& key) const {
    return lookup(key) == kNotFound ? 0 : 1;
  }

  template <class KeyType>
  iterator find(KeyType&& key) {
    const size_t pos = lookup(key);
    return pos == kNotFound ? this->end() : this->begin() + static_cast<ptrdiff_t>(pos);
  }
  template <class KeyType>
  const_iterator find(KeyType&& key) const {
    const size_t pos = lookup(key);
    return pos == kNotFound ? this->end() : this->begin() + static_cast<ptrdiff_t>(pos);
  }

  template <class KeyType,
            std::enable_if_t<!std::is_convertible_v<KeyType, const_iterator>, int> = 0>
  size_type erase(KeyType&& key) {
    const size_t pos = lookup(key);
    if (pos == kNotFound) return 0;
    erase(this->begin() + static_cast<ptrdiff_t>(pos));
    return 1;
  }
  iterator erase(iterator pos) { return erase(pos, std::next(pos)); }
  iterator erase(iterator first, iterator last) {
    if (first == last) return first;
    const auto n_erased = std::distance(first, last);
    const auto offset = std::distance(this->begin(), first);
    // The pairs' keys are const: destroy and re-create in place to shift (as ordered_map does).
    for (auto it = first; std::next(it, n_erased) != this->end(); ++it) {
      it->~value_type();
      new (&*it) value_type{std::move(*std::next(it, n_erased))};
    }
    Container::resize(this->size() - static_cast<size_type>(n_erased));
    rebuild_index();
    return this->begin() + offset;
  }

  void clear() noexcept {
    Container::clear();
    slots_.clear();
    n_indexed_ = 0;
  }

  std::pair<iterator, bool> insert(value_type&& value) {
    return emplace(value.first, std::move(value.second));
  }
  std::pair<iterator, bool> insert(const value_type& value) {
    if (const size_t pos = lookup(value.first); pos != kNotFound)
      return {this->begin() + static_cast<ptrdiff_t>(pos), false};
    Container::push_back(value);
    index_last();
    return {std::prev(this->end()), true};
  }
  template <
      typename InputIt,
      typename = std::enable_if_t<std::is_convertible_v<
          typename std::iterator_traits<InputIt>::iterator_category, std::input_iterator_tag>>>
  void insert(InputIt first, InputIt last) {
    for (auto it = first; it != last; ++it) insert(*it);
  }

 private:
  static constexpr size_t kNotFound = ~size_t{0};
  static constexpr uint32_t kEmpty = ~uint32_t{0};

  static size_t hash_of(std::string_view key) { return std::hash<std::string_view>{}(key); }

  bool index_valid() const { return !slots_.empty() && n_indexed_ == this->size(); }

  template <class KeyType>
  size_t lookup(const KeyType& key) const {
    const std::string_view k(key);
    if (index_valid()) {
      const size_t mask = slots_.size() - 1;
      for (size_t i = hash_of(k) & mask;; i = (i + 1) & mask) {
        const uint32_t pos = slots_[i];
        if (pos == kEmpty) return kNotFound;
        if (std::string_view(Container::operator[](pos).first) == k) return pos;
      }
    }
    for (size_t pos = 0; pos < this->size(); ++pos)
      if (std::string_view(Container::operator[](pos).first) == k) return pos;
    return kNotFound;
  }

  void place(uint32_t pos) {
    const size_t mask = slots_.size() - 1;
    size_t i = hash_of(std::string_view(Container::operator[](pos).first)) & mask;
    while (slots_[i] != kEmpty) i = (i + 1) & mask;
    slots_[i] = pos;
  }

  // The element just appended at the back: index it (building the index at kMinIndexed keys,
  // doubling the table at half load).
  void index_last() {
    const size_t n = this->size();
    if (n < kMinIndexed) return;
    if (n_indexed_ + 1 != n || slots_.size() < 2 * n) return rebuild_index();
    place(static_cast<uint32_t>(n - 1));
    n_indexed_ = n;
  }

  void rebuild_index() {
    const size_t n = this->size();
    slots_.clear();
    n_indexed_ = 0;
    if (n < kMinIndexed) return;
    size_t cap = 64;
    while (cap < 4 * n) cap *= 2;
    slots_.assign(cap, kEmpty);
    for (size_t pos = 0; pos < n; ++pos) place(static_cast<uint32_t>(pos));
    n_indexed_ = n;
  }

  std::vector<uint32_t> slots_;  // open addressing, linear probing; positions into the vector
  size_t n_indexed_ = 0;         // elements the index covers; != size() means "not valid"
};

}  // namespace dss
