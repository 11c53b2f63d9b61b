#include "kv/radix_cache.h"

#include <algorithm>
#include <map>
#include <queue>
#include <tuple>

#include "base/check.h"

namespace dss {

namespace {

// Orders child keys (a child's first page of tokens) and lets `find` take a span without copying.
struct PageKeyLess {
  using is_transparent = void;
  bool operator()(std::span<const TokenId> a, std::span<const TokenId> b) const {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }
};

}  // namespace

// One edge of the tree: a run of whole pages and the tokens they hold.
struct RadixNode {
  RadixNode* parent = nullptr;
  std::vector<TokenId> tokens;  // [pages.size() * page_size]
  std::vector<PageId> pages;    // [n_pages], one tree reference each
  std::map<std::vector<TokenId>, std::unique_ptr<RadixNode>, PageKeyLess>
      children;                // key: first page
  int32_t lock_count = 0;      // handle locks on this node or any descendant
  int32_t n_handle_locks = 0;  // handle locks naming this node
  uint64_t last_access = 0;    // logical clock; never newer than the parent's
  uint64_t id = 0;             // creation order, for deterministic LRU ties
};

namespace {

// Number of leading whole pages on which `node`'s edge and `query` agree.
int32_t n_matching_pages(const RadixNode& node, std::span<const TokenId> query, int32_t page_size) {
  const size_t n_query_pages = query.size() / static_cast<size_t>(page_size);
  const size_t n = std::min(node.pages.size(), n_query_pages);
  const auto ps = static_cast<size_t>(page_size);
  for (size_t i = 0; i < n; ++i) {
    if (!std::equal(query.begin() + static_cast<ptrdiff_t>(i * ps),
                    query.begin() + static_cast<ptrdiff_t>((i + 1) * ps),
                    node.tokens.begin() + static_cast<ptrdiff_t>(i * ps))) {
      return static_cast<int32_t>(i);
    }
  }
  return static_cast<int32_t>(n);
}

std::span<const TokenId> first_page(const RadixNode& node, int32_t page_size) {
  return std::span<const TokenId>(node.tokens).first(static_cast<size_t>(page_size));
}

}  // namespace

RadixCache::RadixCache(int32_t page_size, BlockPool& pool)
    : page_size_(page_size), pool_(&pool), root_(std::make_unique<RadixNode>()) {
  DSS_CHECK(page_size > 0, "page_size=", page_size);
}

RadixCache::~RadixCache() {
  DSS_CHECK(n_locked_pages_ == 0, "RadixCache destroyed with locked pages: ", n_locked_pages_);
  std::vector<const RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    for (const PageId page : node->pages) pool_->release(page);
    for (const auto& [key, child] : node->children) stack.push_back(child.get());
  }
}

MatchResult RadixCache::match(std::span<const TokenId> tokens) const {
  MatchResult result;
  const RadixNode* node = root_.get();
  size_t pos = 0;
  const auto ps = static_cast<size_t>(page_size_);
  while (tokens.size() - pos >= ps) {
    const auto it = node->children.find(tokens.subspan(pos, ps));
    if (it == node->children.end()) break;
    RadixNode* child = it->second.get();
    const int32_t m = n_matching_pages(*child, tokens.subspan(pos), page_size_);
    DSS_DCHECK(m >= 1, "child keyed by a page it does not start with");
    result.pages.insert(result.pages.end(), child->pages.begin(), child->pages.begin() + m);
    pos += static_cast<size_t>(m) * ps;
    result.handle.node = child;
    if (static_cast<size_t>(m) < child->pages.size()) break;
    node = child;
  }
  result.n_tokens = static_cast<int32_t>(pos);
  return result;
}

void RadixCache::record_match(const MatchResult& result, int32_t n_query_tokens) {
  DSS_CHECK(result.n_tokens <= n_query_tokens, "matched=", result.n_tokens,
            " query=", n_query_tokens);
  n_hit_tokens_ += result.n_tokens;
  n_miss_tokens_ += n_query_tokens - result.n_tokens;
}

void RadixCache::touch_path(RadixNode* node) {
  ++clock_;
  for (RadixNode* n = node; n != nullptr && n != root_.get(); n = n->parent)
    n->last_access = clock_;
}

void RadixCache::lock(const PrefixHandle& handle) {
  if (handle.empty()) return;
  ++handle.node->n_handle_locks;
  for (RadixNode* n = handle.node; n != root_.get(); n = n->parent) {
    if (n->lock_count++ == 0) n_locked_pages_ += static_cast<int32_t>(n->pages.size());
  }
  touch_path(handle.node);
}

void RadixCache::unlock(const PrefixHandle& handle) {
  if (handle.empty()) return;
  DSS_CHECK(handle.node->n_handle_locks > 0, "unlock without a matching lock");
  --handle.node->n_handle_locks;
  for (RadixNode* n = handle.node; n != root_.get(); n = n->parent) {
    DSS_CHECK(n->lock_count > 0, "lock count underflow");
    if (--n->lock_count == 0) n_locked_pages_ -= static_cast<int32_t>(n->pages.size());
  }
  touch_path(handle.node);
}

// Cuts `node`'s edge after n_upper_pages. A new node takes the upper part and is put between
// node and its parent, so handles naming `node` keep naming the same (deepest) point and every
// lock through `node` also goes through the new node.
RadixNode* RadixCache::split(RadixNode* node, int32_t n_upper_pages) {
  DSS_DCHECK(n_upper_pages > 0 && static_cast<size_t>(n_upper_pages) < node->pages.size());
  const auto n_upper_tokens = static_cast<ptrdiff_t>(n_upper_pages) * page_size_;
  auto upper = std::make_unique<RadixNode>();
  upper->parent = node->parent;
  upper->tokens.assign(node->tokens.begin(), node->tokens.begin() + n_upper_tokens);
  upper->pages.assign(node->pages.begin(), node->pages.begin() + n_upper_pages);
  upper->lock_count = node->lock_count;
  upper->last_access = node->last_access;
  upper->id = next_id_++;
  node->tokens.erase(node->tokens.begin(), node->tokens.begin() + n_upper_tokens);
  node->pages.erase(node->pages.begin(), node->pages.begin() + n_upper_pages);

  RadixNode* parent = node->parent;
  const auto it = parent->children.find(first_page(*upper, page_size_));
  DSS_CHECK(it != parent->children.end() && it->second.get() == node, "split: bad child key");
  std::unique_ptr<RadixNode> owned = std::move(it->second);
  parent->children.erase(it);
  node->parent = upper.get();
  const auto lower_key = first_page(*node, page_size_);
  upper->children.emplace(std::vector<TokenId>(lower_key.begin(), lower_key.end()),
                          std::move(owned));
  RadixNode* raw = upper.get();
  const auto upper_key = first_page(*raw, page_size_);
  parent->children.emplace(std::vector<TokenId>(upper_key.begin(), upper_key.end()),
                           std::move(upper));
  ++n_nodes_;
  return raw;
}

InsertResult RadixCache::insert(std::span<const TokenId> tokens, std::span<const PageId> pages) {
  const auto ps = static_cast<size_t>(page_size_);
  DSS_CHECK(tokens.size() == pages.size() * ps, "insert of partial pages: tokens=", tokens.size(),
            " pages=", pages.size(), " page_size=", page_size_);
  InsertResult result;
  RadixNode* node = root_.get();
  size_t pos = 0;
  while (pos < tokens.size()) {
    const auto it = node->children.find(tokens.subspan(pos, ps));
    if (it == node->children.end()) {
      auto leaf = std::make_unique<RadixNode>();
      leaf->parent = node;
      leaf->tokens.assign(tokens.begin() + static_cast<ptrdiff_t>(pos), tokens.end());
      leaf->pages.assign(pages.begin() + static_cast<ptrdiff_t>(pos / ps), pages.end());
      leaf->id = next_id_++;
      for (const PageId page : leaf->pages) pool_->retain(page);
      result.n_new_pages = static_cast<int32_t>(leaf->pages.size());
      n_cached_pages_ += result.n_new_pages;
      ++n_nodes_;
      result.handle.node = leaf.get();
      const auto key = first_page(*leaf, page_size_);
      node->children.emplace(std::vector<TokenId>(key.begin(), key.end()), std::move(leaf));
      break;
    }
    RadixNode* child = it->second.get();
    const int32_t m = n_matching_pages(*child, tokens.subspan(pos), page_size_);
    DSS_DCHECK(m >= 1, "child keyed by a page it does not start with");
    const size_t next_pos = pos + static_cast<size_t>(m) * ps;
    // Split only when the inserted run continues past a divergence inside this edge.
    if (static_cast<size_t>(m) < child->pages.size() && next_pos < tokens.size()) {
      child = split(child, m);
    }
    result.n_dup_pages += m;
    result.handle.node = child;
    pos = next_pos;
    node = child;
  }
  if (!result.handle.empty()) touch_path(result.handle.node);
  return result;
}

int32_t RadixCache::evict(int32_t n_pages) {
  if (n_pages <= 0) return 0;
  using Entry = std::tuple<uint64_t, uint64_t, RadixNode*>;  // (last_access, id, node)
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap;
  std::vector<RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    RadixNode* node = stack.back();
    stack.pop_back();
    for (const auto& [key, child] : node->children) stack.push_back(child.get());
    if (node != root_.get() && node->children.empty() && node->lock_count == 0) {
      heap.emplace(node->last_access, node->id, node);
    }
  }
  int32_t n_evicted = 0;
  while (n_evicted < n_pages && !heap.empty()) {
    RadixNode* leaf = std::get<2>(heap.top());
    heap.pop();
    for (const PageId page : leaf->pages) pool_->release(page);
    const auto n_leaf_pages = static_cast<int32_t>(leaf->pages.size());
    n_evicted += n_leaf_pages;
    n_cached_pages_ -= n_leaf_pages;
    --n_nodes_;
    RadixNode* parent = leaf->parent;
    const auto it = parent->children.find(first_page(*leaf, page_size_));
    DSS_CHECK(it != parent->children.end() && it->second.get() == leaf, "evict: bad child key");
    parent->children.erase(it);  // frees leaf
    if (parent != root_.get() && parent->children.empty() && parent->lock_count == 0) {
      heap.emplace(parent->last_access, parent->id, parent);
    }
  }
  return n_evicted;
}

RadixSizeInfo RadixCache::size_info() const {
  RadixSizeInfo info;
  info.n_nodes = n_nodes_;
  info.n_cached_pages = n_cached_pages_;
  info.n_locked_pages = n_locked_pages_;
  info.n_evictable_pages = n_cached_pages_ - n_locked_pages_;
  return info;
}

void RadixCache::check_integrity() const {
  std::vector<uint8_t> seen(static_cast<size_t>(pool_->n_pages()), 0);
  int32_t n_nodes = 0, n_pages = 0, n_locked = 0;
  std::vector<const RadixNode*> stack = {root_.get()};
  while (!stack.empty()) {
    const RadixNode* node = stack.back();
    stack.pop_back();
    int32_t child_locks = 0;
    for (const auto& [key, child] : node->children) {
      DSS_CHECK(child->parent == node, "bad parent link");
      DSS_CHECK(!child->pages.empty(), "empty edge");
      DSS_CHECK(child->tokens.size() == child->pages.size() * static_cast<size_t>(page_size_),
                "edge tokens=", child->tokens.size(), " pages=", child->pages.size());
      DSS_CHECK(std::ranges::equal(key, first_page(*child, page_size_)), "bad child key");
      DSS_CHECK(child->last_access <= node->last_access || node == root_.get(),
                "child newer than parent");
      child_locks += child->lock_count;
      stack.push_back(child.get());
    }
    if (node == root_.get()) continue;
    DSS_CHECK(node->n_handle_locks >= 0 && node->lock_count == node->n_handle_locks + child_locks,
              "lock_count=", node->lock_count, " own=", node->n_handle_locks,
              " children=", child_locks);
    ++n_nodes;
    n_pages += static_cast<int32_t>(node->pages.size());
    if (node->lock_count > 0) n_locked += static_cast<int32_t>(node->pages.size());
    for (const PageId page : node->pages) {
      DSS_CHECK(pool_->refcount(page) > 0, "tree page not referenced in the pool: ", page);
      DSS_CHECK(seen[static_cast<size_t>(page)] == 0, "page stored twice in the tree: ", page);
      seen[static_cast<size_t>(page)] = 1;
    }
  }
  DSS_CHECK(n_nodes == n_nodes_ && n_pages == n_cached_pages_ && n_locked == n_locked_pages_,
            "counters: nodes ", n_nodes, "/", n_nodes_, " pages ", n_pages, "/", n_cached_pages_,
            " locked ", n_locked, "/", n_locked_pages_);
}

}  // namespace dss
