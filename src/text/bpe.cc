#include "text/bpe.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "text/byte_level.h"

namespace dss {
namespace {

constexpr int32_t kNoRank = std::numeric_limits<int32_t>::max();
// Pieces up to this many bytes use the quadratic rank-array loop (fewer allocations);
// longer ones use the heap so adversarial input stays O(n log n).
constexpr size_t kSmallPiece = 96;

uint64_t pair_key(TokenId a, TokenId b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

}  // namespace

const BpeModel::MergeSlot* BpeModel::find_merge(TokenId a, TokenId b) const {
  uint64_t key = pair_key(a, b);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    const MergeSlot& s = merges_[i];
    if (s.key == key) return &s;
    if (s.key == ~uint64_t{0}) return nullptr;
  }
}

void BpeModel::insert_merge(TokenId a, TokenId b, int32_t rank, TokenId merged) {
  uint64_t key = pair_key(a, b);
  for (uint64_t i = mix(key) & merge_mask_;; i = (i + 1) & merge_mask_) {
    MergeSlot& s = merges_[i];
    if (s.key == key) return;  // a repeated merge keeps its first (lowest) rank, as HF does
    if (s.key == ~uint64_t{0}) {
      s = MergeSlot{key, rank, merged};
      return;
    }
  }
}

Result<BpeModel> BpeModel::from_json(const Json& model) {
  if (model.value("type", "") != "BPE") return Status::error("model: type must be BPE");
  if (model.value("byte_fallback", false)) {
    return Status::error("model: byte_fallback is not supported");
  }
  if (model.contains("dropout") && !model["dropout"].is_null()) {
    return Status::error("model: BPE dropout is not supported");
  }
  if (model.value("ignore_merges", false)) return Status::error("model: ignore_merges unsupported");
  if (!model.contains("vocab") || !model["vocab"].is_object() || !model.contains("merges") ||
      !model["merges"].is_array()) {
    return Status::error("model: vocab (object) and merges (array) are required");
  }
  BpeModel m;
  for (auto it = model["vocab"].begin(); it != model["vocab"].end(); ++it) {
    if (!it.value().is_number_integer()) return Status::error("model.vocab: non-integer id");
    int64_t id = it.value().get<int64_t>();
    if (id < 0 || id > (1 << 24)) return Status::error("model.vocab: id out of range: ", id);
    if (static_cast<size_t>(id) >= m.id_bytes_.size()) m.id_bytes_.resize(id + 1);
    // Entries outside the byte-level alphabet (DeepSeek's `<｜begin▁of▁sentence｜>` etc.) can
    // never be built from bytes; like HF's ByteLevel decoder they decode to their own UTF-8.
    std::optional<std::string> bytes = byte_level_decode(it.key());
    if (!bytes) {
      m.id_bytes_[id] = it.key();
      continue;
    }
    m.id_bytes_[id] = *bytes;
    m.to_id_.emplace(*bytes, static_cast<TokenId>(id));
  }
  for (int b = 0; b < 256; ++b) {
    TokenId id = m.find(std::string(1, static_cast<char>(b)));
    if (id < 0) return Status::error("model.vocab: byte ", b, " has no token");
    m.byte_id_[b] = id;
  }
  const Json& merges = model["merges"];
  size_t cap = 1;
  while (cap < merges.size() * 2 + 16) cap <<= 1;
  m.merges_.assign(cap, MergeSlot{});
  m.merge_mask_ = cap - 1;
  for (size_t r = 0; r < merges.size(); ++r) {
    std::string a, b;
    const Json& e = merges[r];
    if (e.is_string()) {  // "left right"
      const std::string& s = e.get_ref<const std::string&>();
      size_t sp = s.find(' ');
      if (sp == std::string::npos) return Status::error("model.merges[", r, "]: no space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return Status::error("model.merges[", r, "]: expected \"a b\" or [a, b]");
    }
    auto ba = byte_level_decode(a), bb = byte_level_decode(b);
    if (!ba || !bb) return Status::error("model.merges[", r, "]: not byte-level text");
    TokenId ia = m.find(*ba), ib = m.find(*bb), im = m.find(*ba + *bb);
    if (ia < 0 || ib < 0 || im < 0) {
      return Status::error("model.merges[", r, "]: '", a, " ", b, "' uses unknown tokens");
    }
    m.insert_merge(ia, ib, static_cast<int32_t>(r), im);
  }
  return m;
}

std::string_view BpeModel::id_bytes(TokenId id) const {
  if (id < 0 || id >= n_ids()) return {};
  return id_bytes_[id];
}

TokenId BpeModel::find(std::string_view bytes) const {
  auto it = to_id_.find(std::string(bytes));
  return it == to_id_.end() ? -1 : it->second;
}

void BpeModel::encode_piece(std::string_view piece, std::vector<TokenId>& out) const {
  if (piece.size() == 1) {
    out.push_back(byte_id_[static_cast<uint8_t>(piece[0])]);
  } else if (piece.size() <= kSmallPiece) {
    encode_small(piece, out);
  } else {
    encode_large(piece, out);
  }
}

void BpeModel::encode_small(std::string_view piece, std::vector<TokenId>& out) const {
  TokenId sym[kSmallPiece];
  int32_t rank[kSmallPiece];  // rank[i]: merge rank of (sym[i], sym[i+1])
  size_t n = piece.size();
  for (size_t i = 0; i < n; ++i) sym[i] = byte_id_[static_cast<uint8_t>(piece[i])];
  auto rank_of = [&](size_t i) {
    const MergeSlot* s = find_merge(sym[i], sym[i + 1]);
    return s ? s->rank : kNoRank;
  };
  for (size_t i = 0; i + 1 < n; ++i) rank[i] = rank_of(i);
  while (n > 1) {
    size_t best = 0;
    for (size_t i = 1; i + 1 < n; ++i) {
      if (rank[i] < rank[best]) best = i;
    }
    if (rank[best] == kNoRank) break;
    sym[best] = find_merge(sym[best], sym[best + 1])->merged;
    for (size_t i = best + 1; i + 1 < n; ++i) sym[i] = sym[i + 1];
    for (size_t i = best + 1; i + 2 < n; ++i) rank[i] = rank[i + 1];
    --n;
    if (best + 1 < n) rank[best] = rank_of(best);
    if (best > 0) rank[best - 1] = rank_of(best - 1);
  }
  out.insert(out.end(), sym, sym + n);
}

void BpeModel::encode_large(std::string_view piece, std::vector<TokenId>& out) const {
  size_t n = piece.size();
  std::vector<TokenId> sym(n);
  std::vector<int32_t> next(n), prev(n);
  for (size_t i = 0; i < n; ++i) {
    sym[i] = byte_id_[static_cast<uint8_t>(piece[i])];
    next[i] = static_cast<int32_t>(i) + 1;  // n = end
    prev[i] = static_cast<int32_t>(i) - 1;
  }
  struct Cand {
    int32_t rank, pos;
    TokenId left, right;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  auto push = [&](int32_t i) {
    int32_t j = next[i];
    if (j >= static_cast<int32_t>(n)) return;
    if (const MergeSlot* s = find_merge(sym[i], sym[j])) heap.push({s->rank, i, sym[i], sym[j]});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int32_t>(i));
  while (!heap.empty()) {
    Cand c = heap.top();
    heap.pop();
    int32_t i = c.pos, j = next[i];
    // Stale entries: the left symbol was merged away (sym = -1) or either side changed.
    if (sym[i] != c.left || j >= static_cast<int32_t>(n) || sym[j] != c.right) continue;
    sym[i] = find_merge(c.left, c.right)->merged;
    sym[j] = -1;
    next[i] = next[j];
    if (next[j] < static_cast<int32_t>(n)) prev[next[j]] = i;
    push(i);
    if (prev[i] >= 0) push(prev[i]);
  }
  for (int32_t i = 0; i < static_cast<int32_t>(n); i = next[i]) out.push_back(sym[i]);
}

}  // namespace dss
