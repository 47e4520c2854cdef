// ce::BTree: the in-memory B+tree behind TREE indexes (in the spirit of Tarantool's bps_tree).
//
// Layout. Every node is 512 bytes or less: a leaf is {count, last, next, 31 elements} (512 B for
// 16-byte elements), an inner node is {count, last, 21 x {max element, child}} (512 B). 512 B is
// eight cache lines: a binary search touches a handful of them, shifting inside a node (memmove
// <= 496 B) is cheap, the leaf header costs 3%, and a fanout of 21 keeps 1M elements 5 levels
// deep. Bigger nodes would cut the inner overhead (already ~5%) a little but make every insert and
// erase move more bytes; smaller ones add levels and misses.
// Elements live only in leaves; the leaves form a singly linked list, so next/begin/last are
// O(1). A leaf has no prev pointer: with one, 30 elements fit and 8 bytes of each leaf went
// unused, so the pointer cost 1/31 of every tree (0.55 B per element). prev() within a leaf is
// O(1); from the first element of a leaf it descends from the root (O(log n), once per 31 steps
// of a reverse walk), and the leaf before an emptied last leaf is found from the erase's path.
// There are no parent pointers: insert and erase record the descent path on a stack.
//
// Inner copies. An inner node stores, for each child, a copy of the largest element of that
// child's subtree; a search descends into the first child whose max is >= the key. The copies are
// always exact, so every element a node holds (below its count) is an element stored in the tree
// and no comparator ever sees an erased element. Whenever an operation changes the last element
// of a node (insert or erase at its end, redistribution, merge), the same call rewrites the
// parent's entry from the node and walks up while the node is its parent's last child, before any
// further comparison. Slots past a node's count are dead storage and are never read.
//
// Invariants (all verified by check()): all leaves are at the same depth; elements strictly
// ascend along the leaf list; the root is a leaf with >= 1 element or an inner node with >= 2
// children (an empty tree has no node); every other node holds >= 1/3 of its capacity (leaf 10,
// inner 7), except the first and last node of each level, which hold >= 1 (see edge splits).
//
// Insert. When the target node is full:
//  - edge split: an append past the end of the last node of its level (prepend before the first)
//    moves the new entry alone into a new node and leaves the old one full, so ascending or
//    descending inserts (TTLs) fill leaves and inner nodes to 100%;
//  - else, if a sibling under the same parent has room, the two nodes are evened out (B*-style);
//  - else the node and a full sibling split 2 -> 3 (each ~2/3 full); a node without siblings
//    splits 1 -> 2. Random inserts settle at ~86% leaf fill.
//  Append points inside the tree: a TTL index of many distinct times gets each insert at the end
//  of its time's run (ties ascend by primary key), so the leaves an append point has passed never
//  get another insert, and evened-out nodes stay 2/3 full there (95.5% leaf fill at 10M tuples
//  over 3,600 times). Each node therefore records where its last insert went (`last`, in the
//  header's padding); when the new entry lands right after it or right before it, the shift or
//  split packs the nodes on either side as full as the bounds allow and leaves the room in the
//  node that takes the new entry (and the entry after it, where the next insert goes): 98.6% leaf
//  fill in that case. A stale `last` only changes the shape of a valid split.
//  A split adds one entry to the parent, handled the same way; a root split adds a level.
//  Exception safety: a dry run of the same decisions counts the nodes the insert will need and
//  allocates them before anything is modified, so std::bad_alloc leaves the tree untouched.
//
// Erase. A node that drops below 1/3 merges with a sibling when both fit in one node, otherwise it
// evens out with the larger sibling; a merge removes an entry from the parent, which is checked in
// turn. An empty edge node without a sibling is freed. A root with one child is replaced by it.
// Erasing from the left end costs a memmove within the first leaf per erase plus one borrow or
// merge per ~15 erases, and frees a leaf per ~30 erases.
//
// erase_successor. Erase remembers where the element that followed the erased one lives: at the
// same leaf position, or at the start of the next leaf. Leaf rebalancing only concatenates or
// evens out two adjacent leaves, so the position is remapped through it; inner rebalancing never
// moves elements. Any later insert or erase may move it again (hence the version() rule).
//
// Costs. Lookups: O(log n) comparisons over ~log21(n) nodes. Insert/erase: the same plus one
// memmove within a leaf; splits, merges and redistributions are amortized O(1) node copies per
// operation. build(): O(n), all nodes full except the last of each level. Memory per 16-byte
// element: 17.3 B when packed (sequential inserts, build()), 20.3 B after random inserts, 17.8 B
// for a TTL index loaded over 3,600 distinct times (10M elements).
//
// Nodes are 512-byte blocks of a NodePool (node_pool.h): a free list over 2 MiB chunks, not
// malloc. memory() counts live nodes; freed ones wait in the pool for later inserts
// until the tree is emptied or cleared, which releases the pool. reserved() counts the pool.
//
// Rollback never allocates. A transaction's rollback re-inserts what it erased (space.h), so the
// tree keeps, while a transaction is open, enough free nodes in its pool for every re-insert the
// rollback could make: reserve_undo(k, inserting) runs before each change (and throws
// std::bad_alloc with nothing changed), hold() keeps the pool from being released when the tree
// empties, and release_hold() ends that. An in-place swap of two equal elements
// (replace_equal) changes no structure and never allocates.
// The bound. One insert into a tree of height h allocates at most h + 2 nodes: one per level of
// its path (h + 1) when every one of them splits, plus a new root. Erases never allocate, and a
// node an undo step frees goes back to the held pool for the next step. A rollback of k
// re-inserts therefore takes at most k * (H + 2) nodes, H the greatest height during it. The
// height when the rollback starts is at most h + 1, h the height at the last reserve_undo (the
// change after it may split the root once). A rollback raises it again only by a root split,
// which needs a full root: we assume a rollback adds at most one more level (H <= h + 2), which
// holds unless the new root, created with 2 entries, gains kInnerCap - 2 more entries during the
// same rollback, each from a split of a full node below it, each of those from splits further
// down; so reserve_undo keeps k * (h + 4) nodes. It is also never more than the most nodes a
// valid tree of size() + k elements and h + 3 levels can have, minus the live ones (the element
// count during a rollback is at most size() + k: each state it passes through is one the
// transaction had, and the transaction's later changes erased at most k of its elements).
// Memory: a reserved node is a free 512-byte block of the pool, so an open transaction holds up
// to (h + 4) * 512 bytes per tuple it removed from this tree (3.5 KiB at 1M tuples, h = 3), less
// when the tree is small; the pool build keeps them on the free list for later inserts, the
// CE_TUPLE_MALLOC build frees them when the transaction ends.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "alloc/node_pool.h"

namespace ce {

template <typename Elem, typename Cmp>
class BTree {
  static_assert(std::is_trivially_copyable_v<Elem>, "elements are moved as raw bytes");
  static_assert(std::is_default_constructible_v<Elem>, "nodes hold arrays of elements");

  struct Node;
  struct Leaf;
  struct Inner;

 public:
  struct Iterator {
    Leaf* leaf = nullptr;
    uint32_t pos = 0;
    friend bool operator==(Iterator a, Iterator b) { return a.leaf == b.leaf && a.pos == b.pos; }
    friend bool operator!=(Iterator a, Iterator b) { return !(a == b); }
  };

  explicit BTree(Cmp cmp) : cmp_(std::move(cmp)) {}
  ~BTree() { free_nodes(); }
  BTree(const BTree&) = delete;
  BTree& operator=(const BTree&) = delete;

  const Cmp& cmp() const { return cmp_; }
  size_t size() const { return size_; }
  size_t memory() const { return memory_; }
  // Every byte the node pool holds: live nodes, freed nodes and the unused rest of its last chunk.
  size_t reserved() const { return pool_.reserved(); }
  uint64_t version() const { return version_; }

  // Returns false (and changes nothing) when an equal element is stored. Throws std::bad_alloc
  // with the tree unchanged. Invalidates every iterator (bumps version()).
  bool insert(const Elem& e) {
    if (!root_) {
      Leaf* leaf = new_leaf();
      leaf->count = 1;
      leaf->items[0] = e;
      root_ = head_ = tail_ = leaf;
      ++size_;
      ++version_;
      return true;
    }
    Path path;
    auto below = below_elem(e);
    Leaf* leaf = descend(below, &path, true);
    uint32_t pos = search(leaf->items, leaf->count, below);
    if (pos < leaf->count && cmp_.compare(leaf->items[pos], e) == 0) return false;
    if (leaf->count < kLeafCap) {
      insert_item(leaf, pos, e);
      if (pos + 1 == leaf->count) refresh_up(path, height_, leaf->items[pos]);
    } else {
      insert_into_full(path, leaf, pos, e);
    }
    ++size_;
    ++version_;
    return true;
  }

  // Swaps the stored element equal to `old` for `nw` in place. REQUIRES: old is stored and
  // cmp().compare(old, nw) == 0. Never allocates; invalidates every iterator.
  void replace_equal(const Elem& old, const Elem& nw) {
    Path path;
    auto below = below_elem(old);
    Leaf* leaf = descend(below, &path, false);
    const uint32_t pos = search(leaf->items, leaf->count, below);
    leaf->items[pos] = nw;
    if (pos + 1 == leaf->count) refresh_up(path, height_, nw);
    ++version_;
  }

  // See the header comment: makes sure the pool holds the nodes that k re-inserts by a later
  // rollback need, plus what the coming change takes (an insert when `inserting`). Throws
  // std::bad_alloc with the tree unchanged.
  void reserve_undo(size_t k, bool inserting) {
    if (k == 0) return;
    const size_t h = height_;
    // Fast path: the pool already holds what the bound below could ask for at most (the usual
    // case inside a chunk, whose first statements grew the pool), so skip computing it.
    if (k <= SIZE_MAX / (h + 4) - 1 && pool_.available() >= k * (h + 4) + (inserting ? h + 2 : 0)) return;
    size_t need = k * (h + 4);
    if (need / (h + 4) != k) need = SIZE_MAX;
    // The most nodes a valid tree of n elements and h + 3 levels can have.
    const size_t n = size_ + k;
    size_t level = n <= 2 ? n : (n - 2) / kLeafMin + 2, most = level;
    for (size_t d = 0; d < h + 2; ++d) {
      level = level <= 2 ? level : (level - 2) / kInnerMin + 2;
      most += level;
    }
    const size_t live = memory_ / kNodeBytes;
    need = std::min(need, most > live ? most - live : 0);
    if (inserting) need += h + 2;
    if (pool_.available() < need) pool_.reserve(need);
  }
  // While held, an emptied tree keeps its pool (a rollback may re-insert).
  void hold() { held_ = true; }
  void release_hold() {
    held_ = false;
    if (!root_) pool_.reset();
    else pool_.release_spares();
  }

  // Returns false when no equal element is stored. Never allocates. Invalidates every iterator
  // except erase_successor().
  bool erase(const Elem& e) {
    if (!root_) return false;
    if (erase_near_successor(e)) return true;
    Path path;
    auto below = below_elem(e);
    Leaf* leaf = descend(below, &path, false);
    if (!leaf) return false;
    uint32_t pos = search(leaf->items, leaf->count, below);
    if (pos == leaf->count || cmp_.compare(leaf->items[pos], e) != 0) return false;
    remove_item(leaf, pos);
    --size_;
    ++version_;
    if (height_ == 0 && leaf->count == 0) {
      release(leaf);
      if (!held_) pool_.reset();  // the last node: hand the pool's chunks back too
      root_ = head_ = tail_ = nullptr;
      successor_ = Iterator{};
    } else if (height_ == 0 || leaf->count >= kLeafMin) {
      if (pos == leaf->count) refresh_up(path, height_, max_of(leaf));
      successor_ = at(leaf, pos);
    } else {
      rebalance(path, leaf, pos);
    }
    successor_version_ = version_;
    return true;
  }

  const Elem* find(const Elem& e) const {
    Iterator it = lower_bound_elem(e);
    if (!it.leaf || cmp_.compare(it.leaf->items[it.pos], e) != 0) return nullptr;
    return &it.leaf->items[it.pos];
  }

  Iterator begin() const { return head_ ? Iterator{head_, 0} : Iterator{}; }
  Iterator end() const { return Iterator{}; }
  // The element k positions after `it` when it lies in the same leaf, else nullptr: a cheap
  // look-ahead for prefetching, which never crosses to another node.
  const Elem* ahead(Iterator it, uint32_t k) const {
    return it.leaf != nullptr && it.pos + k < it.leaf->count ? &it.leaf->items[it.pos + k] : nullptr;
  }
  Iterator last() const { return tail_ ? Iterator{tail_, tail_->count - 1} : Iterator{}; }

  // kc(x) < 0, == 0, > 0 as x orders before, with, after the key. REQUIRES: kc is monotone
  // along the tree's order.
  template <class KC>
  Iterator lower_bound(KC kc) const {
    return bound([&kc](const Elem& x) { return kc(x) < 0; });
  }
  template <class KC>
  Iterator upper_bound(KC kc) const {
    return bound([&kc](const Elem& x) { return kc(x) <= 0; });
  }
  Iterator lower_bound_elem(const Elem& e) const { return bound(below_elem(e)); }
  Iterator upper_bound_elem(const Elem& e) const {
    return bound([this, &e](const Elem& x) { return cmp_.compare(x, e) <= 0; });
  }

  bool valid(Iterator it) const { return it.leaf != nullptr; }
  // REQUIRES: valid(it), and no insert or erase since it was obtained.
  const Elem& get(Iterator it) const { return it.leaf->items[it.pos]; }
  // REQUIRES: valid(it), and no insert or erase since it was obtained.

  void next(Iterator& it) const {
    if (++it.pos >= it.leaf->count) it = Iterator{it.leaf->next, 0};
  }
  // From end() it goes to last(). REQUIRES: no insert or erase since it was obtained.
  void prev(Iterator& it) const {
    if (!it.leaf) {
      it = last();
    } else if (it.pos > 0) {
      --it.pos;
    } else {
      Path path;
      descend(below_elem(it.leaf->items[0]), &path, false);
      Leaf* p = leaf_before(path);
      it = p ? Iterator{p, p->count - 1} : Iterator{};
    }
  }

  // Where the element after the last erased one is now. REQUIRES: the last change was an erase.
  Iterator erase_successor() const { return successor_; }
  // When the last change was an erase: the first of the kNearSuccessor positions from
  // erase_successor() on, within its leaf, whose element satisfies match(elem); else end().
  // A cursor that read ahead of a few erases finds its place again here without a descent.
  template <class Match>
  Iterator near_successor(Match match) const {
    if (successor_version_ != version_ || successor_.leaf == nullptr) return Iterator{};
    const Leaf* leaf = successor_.leaf;
    const uint32_t end = std::min(leaf->count, successor_.pos + kNearSuccessor);
    for (uint32_t pos = successor_.pos; pos < end; ++pos)
      if (match(leaf->items[pos])) return Iterator{successor_.leaf, pos};
    return Iterator{};
  }

  void clear() {
    free_nodes();
    pool_.reset();
    root_ = head_ = tail_ = nullptr;
    height_ = 0;
    size_ = 0;
    successor_ = Iterator{};
    ++version_;
  }

  // Replaces the contents. REQUIRES: sorted[0..n) strictly ascending. Throws std::bad_alloc
  // with the tree unchanged.
  void build(const Elem* sorted, size_t n) {
    if (n == 0) return clear();
    size_t per_level[kMaxHeight + 1];
    uint32_t levels = 0;
    size_t total = per_level[levels++] = (n + kLeafCap - 1) / kLeafCap;
    while (per_level[levels - 1] > 1) {
      per_level[levels] = (per_level[levels - 1] + kInnerCap - 1) / kInnerCap;
      total += per_level[levels++];
    }
    const size_t leaves = per_level[0];
    std::vector<Node*> nodes;
    fault::point();
    nodes.reserve(total);
    try {
      while (nodes.size() < leaves) nodes.push_back(new_leaf());
      while (nodes.size() < total) nodes.push_back(new_inner());
    } catch (...) {
      for (size_t j = 0; j < nodes.size(); ++j) {
        if (j < leaves) release(static_cast<Leaf*>(nodes[j]));
        else release(static_cast<Inner*>(nodes[j]));
      }
      throw;
    }
    auto leaf_at = [&](size_t j) { return static_cast<Leaf*>(nodes[j]); };
    for (size_t j = 0; j < leaves; ++j) {
      Leaf* leaf = leaf_at(j);
      size_t from = j * kLeafCap, count = std::min<size_t>(kLeafCap, n - from);
      std::copy(sorted + from, sorted + from + count, leaf->items);
      leaf->count = static_cast<uint32_t>(count);
      leaf->next = j + 1 < leaves ? leaf_at(j + 1) : nullptr;
    }
    for (size_t lv = 1, child_base = 0; lv < levels; ++lv) {
      size_t base = child_base + per_level[lv - 1];
      for (size_t j = 0; j < per_level[lv]; ++j) {
        Inner* inner = static_cast<Inner*>(nodes[base + j]);
        size_t from = j * kInnerCap, count = std::min<size_t>(kInnerCap, per_level[lv - 1] - from);
        inner->count = static_cast<uint32_t>(count);
        for (size_t q = 0; q < count; ++q) {
          Node* child = nodes[child_base + from + q];
          const Elem& max = lv == 1 ? max_of(static_cast<Leaf*>(child)) : max_of(static_cast<Inner*>(child));
          inner->items[q] = Entry{max, child};
        }
      }
      child_base = base;
    }
    destroy(root_, height_);
    root_ = nodes.back();
    head_ = leaf_at(0);
    tail_ = leaf_at(leaves - 1);
    height_ = levels - 1;
    size_ = n;
    successor_ = Iterator{};
    ++version_;
  }

  bool check(std::string* why) const {
    auto fail = [why](const std::string& msg) {
      if (why) *why = msg;
      return false;
    };
    if (!root_) {
      if (size_ || head_ || tail_ || height_ || memory_) return fail("empty tree with leftover state");
      return true;
    }
    std::vector<std::vector<const Node*>> levels(height_ + 1);
    levels[0].push_back(root_);
    size_t inners = 0;
    for (uint32_t d = 0; d < height_; ++d) {
      for (const Node* n : levels[d]) {
        const Inner* inner = static_cast<const Inner*>(n);
        ++inners;
        for (uint32_t j = 0; j < inner->count && j < kInnerCap; ++j) {
          if (!inner->items[j].child) return fail("null child");
          levels[d + 1].push_back(inner->items[j].child);
        }
      }
    }
    for (uint32_t d = 0; d <= height_; ++d) {
      const bool is_leaf = d == height_;
      const uint32_t cap = is_leaf ? kLeafCap : kInnerCap;
      for (size_t j = 0; j < levels[d].size(); ++j) {
        const uint32_t count = levels[d][j]->count;
        const bool edge = j == 0 || j + 1 == levels[d].size();
        const uint32_t min = d == 0 ? (is_leaf ? 1 : 2) : edge ? 1 : is_leaf ? kLeafMin : kInnerMin;
        if (count < min || count > cap) {
          return fail("level " + std::to_string(d) + " node " + std::to_string(j) + " holds " +
                      std::to_string(count) + " entries, bounds [" + std::to_string(min) + ", " +
                      std::to_string(cap) + "]");
        }
      }
    }
    for (uint32_t d = 0; d < height_; ++d) {
      for (const Node* n : levels[d]) {
        const Inner* inner = static_cast<const Inner*>(n);
        for (uint32_t j = 0; j < inner->count; ++j) {
          const Node* child = inner->items[j].child;
          const Elem& max = d + 1 == height_ ? max_of(static_cast<const Leaf*>(child))
                                             : max_of(static_cast<const Inner*>(child));
          if (!same_elem(inner->items[j].max, max)) {
            return fail("level " + std::to_string(d) + ": inner copy is not its subtree's max");
          }
        }
      }
    }
    const auto& leaves = levels[height_];
    if (head_ != leaves.front() || tail_ != leaves.back()) return fail("head/tail mismatch");
    size_t count = 0;
    const Elem* prev_elem = nullptr;
    for (size_t j = 0; j < leaves.size(); ++j) {
      const Leaf* leaf = static_cast<const Leaf*>(leaves[j]);
      if (leaf->next != (j + 1 < leaves.size() ? leaves[j + 1] : nullptr)) {
        return fail("broken leaf links at leaf " + std::to_string(j));
      }
      for (uint32_t q = 0; q < leaf->count; ++q, ++count) {
        if (prev_elem && cmp_.compare(*prev_elem, leaf->items[q]) >= 0) {
          return fail("elements out of order at " + std::to_string(count));
        }
        prev_elem = &leaf->items[q];
      }
    }
    if (count != size_) return fail("size() is " + std::to_string(size_) + ", counted " + std::to_string(count));
    if (memory_ != leaves.size() * sizeof(Leaf) + inners * sizeof(Inner)) return fail("memory() mismatch");
    return true;
  }

 private:
  static constexpr size_t kNodeBytes = 512;
  static constexpr uint32_t kMaxHeight = 48;
  static constexpr size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

  struct Node {
    uint32_t count;
    uint32_t last;  // where the last insert into this node put its entry, or kNoLast (see sizes())
  };
  static constexpr uint32_t kNoLast = ~uint32_t(0);
  struct Entry {
    Elem max;
    Node* child;
  };
  static constexpr uint32_t kLeafCap =
      static_cast<uint32_t>((kNodeBytes - round_up(sizeof(Node) + sizeof(void*), alignof(Elem))) / sizeof(Elem));
  static constexpr uint32_t kInnerCap =
      static_cast<uint32_t>((kNodeBytes - round_up(sizeof(void*), alignof(Entry))) / sizeof(Entry));
  static_assert(kLeafCap >= 4 && kInnerCap >= 4, "element too large for 512-byte nodes");
  static constexpr uint32_t kLeafMin = kLeafCap / 3;
  static constexpr uint32_t kInnerMin = kInnerCap / 3;

  struct Leaf : Node {
    using Item = Elem;
    static constexpr uint32_t kCap = kLeafCap;
    static constexpr uint32_t kMin = kLeafMin;
    Leaf* next;
    Elem items[kLeafCap];
  };
  struct Inner : Node {
    using Item = Entry;
    static constexpr uint32_t kCap = kInnerCap;
    static constexpr uint32_t kMin = kInnerMin;
    Entry items[kInnerCap];
  };
  static_assert(sizeof(Leaf) <= kNodeBytes && sizeof(Inner) <= kNodeBytes, "node layout");

  struct Path {
    Inner* node[kMaxHeight];
    uint32_t idx[kMaxHeight];
  };
  struct Spare {
    Leaf* leaf = nullptr;
    Inner* inner[kMaxHeight + 1];
    uint32_t inners = 0;
  };
  enum class Act { kShiftLeft, kShiftRight, kEdgeLeft, kEdgeRight, kSplit, kThreeLeft, kThreeRight };

  static const Elem& key_of(const Elem& e) { return e; }
  static const Elem& key_of(const Entry& e) { return e.max; }
  static const Elem& max_of(const Leaf* n) { return n->items[n->count - 1]; }
  static const Elem& max_of(const Inner* n) { return n->items[n->count - 1].max; }

  bool same_elem(const Elem& a, const Elem& b) const {
    if constexpr (std::has_unique_object_representations_v<Elem>) {
      return std::memcmp(&a, &b, sizeof(Elem)) == 0;
    } else {
      return cmp_.compare(a, b) == 0;
    }
  }

  auto below_elem(const Elem& e) const {
    return [this, &e](const Elem& x) { return cmp_.compare(x, e) < 0; };
  }

  // First index whose key is not below the searched one.
  template <class Item, class Below>
  static uint32_t search(const Item* items, uint32_t n, const Below& below) {
    uint32_t lo = 0;
    while (n > 0) {
      uint32_t half = n / 2;
      if (below(key_of(items[lo + half]))) {
        lo += half + 1;
        n -= half + 1;
      } else {
        n = half;
      }
    }
    return lo;
  }

  // Descends to the leaf that holds the first element not below the key; nullptr if every element
  // is below it, unless to_last, which then returns the last leaf.
  template <class Below>
  Leaf* descend(const Below& below, Path* path, bool to_last) const {
    Node* n = root_;
    for (uint32_t d = 0; d < height_; ++d) {
      Inner* inner = static_cast<Inner*>(n);
      uint32_t i = search(inner->items, inner->count, below);
      if (i == inner->count) {
        if (!to_last) return nullptr;
        --i;
      }
      if (path) {
        path->node[d] = inner;
        path->idx[d] = i;
      }
      n = inner->items[i].child;
    }
    return static_cast<Leaf*>(n);
  }

  template <class Below>
  Iterator bound(const Below& below) const {
    if (!root_) return Iterator{};
    Leaf* leaf = descend(below, nullptr, false);
    if (!leaf) return Iterator{};
    return at(leaf, search(leaf->items, leaf->count, below));
  }

  static Iterator at(Leaf* leaf, uint32_t pos) {
    if (!leaf) return Iterator{};
    return pos < leaf->count ? Iterator{leaf, pos} : Iterator{leaf->next, 0};
  }

  // The node at `level` got a new max: rewrite its entry and those above while it is a last child.
  static void refresh_up(const Path& path, uint32_t level, const Elem& max) {
    while (level-- > 0) {
      path.node[level]->items[path.idx[level]].max = max;
      if (path.idx[level] + 1 != path.node[level]->count) break;
    }
  }

  template <class N>
  static void insert_item(N* n, uint32_t pos, const typename N::Item& item) {
    std::copy_backward(n->items + pos, n->items + n->count, n->items + n->count + 1);
    n->items[pos] = item;
    ++n->count;
    n->last = pos;
  }
  template <class N>
  static void remove_item(N* n, uint32_t pos) {
    std::copy(n->items + pos + 1, n->items + n->count, n->items + pos);
    --n->count;
  }

  // Rewrites the k adjacent nodes g[] with their items (plus *item at position `at` of the
  // concatenation), node j receiving t[j] items.
  template <class N>
  static void redistribute(N* const* g, uint32_t k, const uint32_t* t, const typename N::Item* item,
                           uint32_t at) {
    typename N::Item buf[3 * N::kCap + 1];
    uint32_t n = 0;
    for (uint32_t j = 0; j < k; ++j) {
      std::copy(g[j]->items, g[j]->items + g[j]->count, buf + n);
      n += g[j]->count;
    }
    if (item) {
      std::copy_backward(buf + at, buf + n, buf + n + 1);
      buf[at] = *item;
    }
    for (uint32_t j = 0, off = 0; j < k; off += t[j++]) {
      std::copy(buf + off, buf + off + t[j], g[j]->items);
      g[j]->count = t[j];
    }
  }

  Leaf* new_leaf() {
    Leaf* leaf = new (pool_.take()) Leaf;
    memory_ += sizeof(Leaf);
    leaf->count = 0;
    leaf->last = kNoLast;
    leaf->next = nullptr;
    return leaf;
  }
  Inner* new_inner() {
    Inner* inner = new (pool_.take()) Inner;
    memory_ += sizeof(Inner);
    inner->count = 0;
    inner->last = kNoLast;
    return inner;
  }
  void release(Leaf* leaf) {
    leaf->~Leaf();
    pool_.give(leaf);
    memory_ -= sizeof(Leaf);
  }
  void release(Inner* inner) {
    inner->~Inner();
    pool_.give(inner);
    memory_ -= sizeof(Inner);
  }
  // Frees every node before the pool is reset or destroyed. In the pool build the pool frees
  // its chunks wholesale and nodes are trivially destructible, so nothing walks the tree: at 10M
  // tuples the walk of 330k nodes made truncate() and drop() pause for over 10 ms.
  void free_nodes() {
#ifdef CE_TUPLE_MALLOC
    destroy(root_, height_);
#else
    static_assert(std::is_trivially_destructible<Leaf>::value && std::is_trivially_destructible<Inner>::value,
                  "nodes are freed with their pool's chunks");
    memory_ = 0;
#endif
  }
  void destroy(Node* n, uint32_t height) {
    if (!n) return;
    if (height == 0) return release(static_cast<Leaf*>(n));
    Inner* inner = static_cast<Inner*>(n);
    for (uint32_t j = 0; j < inner->count; ++j) destroy(inner->items[j].child, height - 1);
    release(inner);
  }

  void link_after(Leaf* pos, Leaf* leaf) {
    leaf->next = pos->next;
    if (pos->next == nullptr) tail_ = leaf;
    pos->next = leaf;
  }
  void link_first(Leaf* leaf) {
    leaf->next = head_;
    head_ = leaf;
  }
  // REQUIRES: `before` is the leaf before `leaf` (nullptr when leaf is the first).
  void unlink(Leaf* before, Leaf* leaf) {
    (before ? before->next : head_) = leaf->next;
    if (tail_ == leaf) tail_ = before;
  }
  // The leaf before the one that `path` (height_ levels) leads to, or nullptr for the first: the
  // last leaf under the left neighbour at the deepest level that has one. O(height).
  Leaf* leaf_before(const Path& path) const {
    for (uint32_t d = height_; d-- > 0;) {
      if (path.idx[d] == 0) continue;
      Node* n = path.node[d]->items[path.idx[d] - 1].child;
      for (uint32_t e = d + 1; e < height_; ++e) {
        const Inner* inner = static_cast<const Inner*>(n);
        n = inner->items[inner->count - 1].child;
      }
      return static_cast<Leaf*>(n);
    }
    return nullptr;
  }

  static bool at_edge(const Path& path, uint32_t level, bool right) {
    for (uint32_t d = 0; d < level; ++d) {
      if (path.idx[d] != (right ? path.node[d]->count - 1 : 0)) return false;
    }
    return true;
  }

  // What to do with a full node at `level` that must take a new entry at position p.
  static Act decide(const Path& path, uint32_t level, uint32_t p, uint32_t cap) {
    if (p == cap && at_edge(path, level, true)) return Act::kEdgeRight;
    if (p == 0 && at_edge(path, level, false)) return Act::kEdgeLeft;
    if (level == 0) return Act::kSplit;
    const Inner* parent = path.node[level - 1];
    const uint32_t i = path.idx[level - 1];
    const bool has_left = i > 0, has_right = i + 1 < parent->count;
    if (has_left && parent->items[i - 1].child->count < cap) return Act::kShiftLeft;
    if (has_right && parent->items[i + 1].child->count < cap) return Act::kShiftRight;
    if (has_right) return Act::kThreeRight;
    if (has_left) return Act::kThreeLeft;
    return Act::kSplit;
  }

  // Dry run of the insert's decisions: allocates every node it will need, or throws untouched.
  void reserve(const Path& path, uint32_t pos, Spare& spare) {
    bool need_leaf = false;
    uint32_t need_inner = 0;
    for (uint32_t level = height_, p = pos;;) {
      const Act act = decide(path, level, p, level == height_ ? kLeafCap : kInnerCap);
      if (act == Act::kShiftLeft || act == Act::kShiftRight) break;
      if (level == height_) need_leaf = true;
      else ++need_inner;
      if (level == 0) {
        ++need_inner;
        break;
      }
      const uint32_t i = path.idx[level - 1];
      p = act == Act::kEdgeLeft || act == Act::kThreeLeft ? i : i + 1;
      if (path.node[--level]->count < kInnerCap) break;
    }
    try {
      if (need_leaf) spare.leaf = new_leaf();
      while (spare.inners < need_inner) spare.inner[spare.inners++] = new_inner();
    } catch (...) {
      if (spare.leaf) release(spare.leaf);
      while (spare.inners > 0) release(spare.inner[--spare.inners]);
      throw;
    }
  }

  template <class N>
  static N* take(Spare& spare) {
    if constexpr (std::is_same_v<N, Leaf>) {
      return std::exchange(spare.leaf, nullptr);
    } else {
      return spare.inner[--spare.inners];
    }
  }

  void insert_into_full(Path& path, Leaf* leaf, uint32_t pos, const Elem& e) {
    Spare spare;
    reserve(path, pos, spare);
    Entry up;
    uint32_t up_pos = 0, level = height_;
    bool carry = place(path, level, leaf, e, pos, spare, up, up_pos);
    while (carry) {
      --level;
      const Entry item = up;
      carry = place(path, level, path.node[level], item, up_pos, spare, up, up_pos);
    }
  }

  // The counts t[0..k) of k adjacent nodes that take `total` entries, the new one at index `at`
  // of their concatenation. Evenly spread, unless `appending` (see "Insert" in the header
  // comment): then the node that gets the new entry also keeps the entry after it, if any, and
  // holds as few entries as the bounds allow, and the nodes on either side are packed as full as
  // the bounds allow.
  static void sizes(uint32_t k, uint32_t total, uint32_t at, uint32_t cap, uint32_t min, bool appending,
                    uint32_t* t) {
    const uint32_t before = at, after = total - 1 - at;
    uint32_t best = appending ? cap + 1 : 0;
    for (uint32_t j = 0; j < k && best > min; ++j) {
      const uint32_t nb = j, na = k - 1 - j;
      uint32_t b = std::min(before, nb * cap);
      uint32_t c = std::min(after > 0 ? after - 1 : 0, na * cap);
      if (b < nb * min || c < na * min) continue;
      if (total - b - c < min) {
        uint32_t need = min - (total - b - c);
        const uint32_t dc = std::min(need, c - na * min);
        c -= dc;
        need -= dc;
        const uint32_t db = std::min(need, b - nb * min);
        b -= db;
        need -= db;
        if (need != 0) continue;
      }
      const uint32_t x = total - b - c;
      if (x > cap || x >= best) continue;
      best = x;
      // Pack the side nodes full from the outside in: the one next to the new entry's node takes
      // the rest, and fills up when that node later overflows into it.
      for (uint32_t q = 0; q < j; b -= t[q++]) t[q] = std::min(cap, b - (j - 1 - q) * min);
      t[j] = x;
      for (uint32_t q = k; q-- > j + 1; c -= t[q]) t[q] = std::min(cap, c - (q - j - 1) * min);
    }
    if (best != 0 && best <= cap) return;
    for (uint32_t j = 0; j < k; ++j) t[j] = total / k + (j < total % k ? 1 : 0);
  }

  // Inserts item at position p of node (at `level` on the path). Returns true when a new node
  // was created: the parent must then take `up` at `up_pos` (its other entries are already fixed).
  template <class N>
  bool place(Path& path, uint32_t level, N* node, const typename N::Item& item, uint32_t p, Spare& spare,
             Entry& up, uint32_t& up_pos) {
    constexpr uint32_t cap = N::kCap;
    if (node->count < cap) {
      insert_item(node, p, item);
      refresh_up(path, level, max_of(node));
      return false;
    }
    const Act act = decide(path, level, p, cap);
    Inner* parent = level > 0 ? path.node[level - 1] : nullptr;
    const uint32_t i = level > 0 ? path.idx[level - 1] : 0;
    auto sibling = [&](uint32_t j) { return static_cast<N*>(parent->items[j].child); };
    N* g[3] = {node, nullptr, nullptr};
    uint32_t k = 2, first = i, fresh = 3;  // fresh: index in g of the new node, 3 if none
    switch (act) {
      case Act::kShiftLeft:
        g[0] = sibling(i - 1);
        g[1] = node;
        first = i - 1;
        break;
      case Act::kShiftRight:
        g[1] = sibling(i + 1);
        break;
      case Act::kEdgeLeft:
        g[0] = take<N>(spare);
        g[1] = node;
        fresh = 0;
        break;
      case Act::kEdgeRight:
      case Act::kSplit:
        g[1] = take<N>(spare);
        fresh = 1;
        break;
      case Act::kThreeLeft:
        g[0] = sibling(i - 1);
        g[1] = take<N>(spare);
        g[2] = node;
        first = i - 1;
        fresh = 1;
        k = 3;
        break;
      case Act::kThreeRight:
        g[1] = take<N>(spare);
        g[2] = sibling(i + 1);
        fresh = 1;
        k = 3;
        break;
    }
    uint32_t total = 1, at = p, t[3];
    for (uint32_t j = 0; j < k; ++j) total += g[j]->count;
    for (uint32_t j = 0; g[j] != node; ++j) at += g[j]->count;
    const bool appending = node->last != kNoLast && (p == node->last + 1 || p == node->last);
    sizes(k, total, at, cap, N::kMin, appending, t);
    if (act == Act::kEdgeRight || act == Act::kEdgeLeft) {
      t[0] = act == Act::kEdgeRight ? cap : 1;
      t[1] = cap + 1 - t[0];
    }
    redistribute(g, k, t, &item, at);
    for (uint32_t j = 0, off = 0; j < k; off += t[j++]) g[j]->last = at >= off && at < off + t[j] ? at - off : kNoLast;
    if constexpr (std::is_same_v<N, Leaf>) {
      if (fresh == 0) link_first(g[0]);  // kEdgeLeft: g[1] is the first leaf
      else if (fresh < 3) link_after(g[fresh - 1], g[fresh]);
    }
    if (!parent) {
      Inner* root = take<Inner>(spare);
      root->count = 2;
      root->items[0] = Entry{max_of(g[0]), g[0]};
      root->items[1] = Entry{max_of(g[1]), g[1]};
      root_ = root;
      ++height_;
      return false;
    }
    for (uint32_t j = 0; j < k; ++j) {
      if (j != fresh) parent->items[first + j - (j > fresh ? 1 : 0)].max = max_of(g[j]);
    }
    if (fresh == 3) {
      refresh_up(path, level - 1, max_of(parent));
      return false;
    }
    up = Entry{max_of(g[fresh]), g[fresh]};
    up_pos = first + fresh;
    return true;
  }

  template <class N>
  void absorb(N* into, N* from) {
    std::copy(from->items, from->items + from->count, into->items + into->count);
    into->count += from->count;
    if constexpr (std::is_same_v<N, Leaf>) unlink(into, from);  // into is just before from
    release(from);
  }

  // node (at level >= 1 on the path) is below its minimum fill. Returns true when the parent
  // lost an entry. (track, tpos) follows one position of node through the restructuring.
  template <class N>
  bool fix_underflow(Path& path, uint32_t level, N* node, N*& track, uint32_t& tpos) {
    Inner* parent = path.node[level - 1];
    const uint32_t i = path.idx[level - 1];
    if (parent->count == 1) {  // an edge node; it may shrink to 1
      if (node->count > 0) {
        refresh_up(path, level, max_of(node));
        return false;
      }
      if constexpr (std::is_same_v<N, Leaf>) {
        track = node->next;
        tpos = 0;
        unlink(leaf_before(path), node);
      }
      release(node);
      parent->count = 0;
      return true;
    }
    N* left = i > 0 ? static_cast<N*>(parent->items[i - 1].child) : nullptr;
    N* right = i + 1 < parent->count ? static_cast<N*>(parent->items[i + 1].child) : nullptr;
    if (left && left->count + node->count <= N::kCap) {
      track = left;
      tpos += left->count;
      absorb(left, node);
      remove_item(parent, i);
      parent->items[i - 1].max = max_of(left);
      return true;
    }
    if (right && node->count + right->count <= N::kCap) {
      absorb(node, right);
      remove_item(parent, i + 1);
      parent->items[i].max = max_of(node);
      return true;
    }
    const bool use_left = left && (!right || left->count >= right->count);
    N* g[2] = {use_left ? left : node, use_left ? node : right};
    const uint32_t first = use_left ? i - 1 : i;
    const uint32_t total = g[0]->count + g[1]->count;
    const uint32_t t[2] = {(total + 1) / 2, total / 2};
    const uint32_t off = tpos + (use_left ? left->count : 0);
    redistribute(g, 2, t, static_cast<const typename N::Item*>(nullptr), 0);
    track = off < t[0] ? g[0] : g[1];
    tpos = off < t[0] ? off : off - t[0];
    parent->items[first].max = max_of(g[0]);
    parent->items[first + 1].max = max_of(g[1]);
    refresh_up(path, level - 1, max_of(parent));
    return false;
  }

  void rebalance(Path& path, Leaf* leaf, uint32_t pos) {
    Leaf* track = leaf;
    bool shrunk = fix_underflow(path, height_, leaf, track, pos);
    successor_ = at(track, pos);
    for (uint32_t level = height_ - 1; shrunk; --level) {
      Inner* node = path.node[level];
      if (level == 0) {
        while (height_ > 0 && root_->count == 1) {
          Inner* root = static_cast<Inner*>(root_);
          root_ = root->items[0].child;
          release(root);
          --height_;
        }
        break;
      }
      if (node->count >= kInnerMin) {
        refresh_up(path, level, max_of(node));
        break;
      }
      Inner* unused_track = node;
      uint32_t unused_pos = 0;
      shrunk = fix_underflow(path, level, node, unused_track, unused_pos);
    }
  }

  // erase() in walk order (the expiry chunk deleting a prefix of a TTL index, or every few
  // entries of the index it walks): when nothing changed since the last erase, e is looked for
  // among the next kNearSuccessor elements of the successor's leaf by its bytes (no comparator,
  // no descent), and erased there when that needs no parent update: it is not the leaf's last
  // element and the leaf stays at or above its minimum (the plain erase's simple case, with the
  // same effects). Returns false, having changed nothing, when it does not apply.
  static constexpr uint32_t kNearSuccessor = 16;
  bool erase_near_successor(const Elem& e) {
    if (successor_version_ != version_ || successor_.leaf == nullptr) return false;
    Leaf* leaf = successor_.leaf;
    const uint32_t end = std::min(leaf->count, successor_.pos + kNearSuccessor);
    for (uint32_t pos = successor_.pos; pos < end; ++pos) {
      if (!same_elem(leaf->items[pos], e)) continue;
      if (pos + 1 == leaf->count || leaf->count <= (height_ == 0 ? 1u : kLeafMin)) return false;
      remove_item(leaf, pos);
      --size_;
      ++version_;
      successor_ = Iterator{leaf, pos};
      successor_version_ = version_;
      return true;
    }
    return false;
  }

  NodePool<kNodeBytes> pool_;
  Cmp cmp_;
  Node* root_ = nullptr;
  Leaf* head_ = nullptr;
  Leaf* tail_ = nullptr;
  uint32_t height_ = 0;
  size_t size_ = 0;
  size_t memory_ = 0;
  uint64_t version_ = 0;
  bool held_ = false;
  Iterator successor_{};
  uint64_t successor_version_ = ~uint64_t(0);  // version() right after the erase that set successor_
};

}  // namespace ce
