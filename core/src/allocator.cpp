// PyTorch's CUDA caching allocator, rule by rule. Function names in comments are those of
// DeviceCachingAllocator in c10/cuda/CUDACachingAllocator.cpp (pytorch 001074d2) unless noted.
#include "allocator.hpp"

#include <algorithm>
#include <bit>
#include <unordered_map>
#include <utility>

namespace memfit {

namespace {

constexpr std::int64_t kMiB = 1LL << 20;
// The constants at the top of CUDACachingAllocator.cpp.
constexpr std::int64_t kMinBlockSize = 512;          // every block is a multiple of 512 bytes
constexpr std::int64_t kSmallSize = 1 * kMiB;        // the largest small-pool request
constexpr std::int64_t kSmallBuffer = 2 * kMiB;      // small requests are packed in 2 MiB segments
constexpr std::int64_t kMinLargeAlloc = 10 * kMiB;   // 1–10 MiB requests get a kLargeBuffer segment
constexpr std::int64_t kRoundLarge = 2 * kMiB;       // larger segments are rounded up to 2 MiB
constexpr std::int64_t kLargeBuffer = kLargeBufferBytes.value();  // 20 MiB
// NativeCachingAllocator::allocate refuses anything from 1 EiB up as out of memory.
constexpr std::int64_t kLargestRequest = 1LL << 60;
// An expandable segment reserves address space for 9/8 of the card (find_expandable_block); with
// no capacity given, 1 PiB stands in for "more than any request".
constexpr std::int64_t kUnlimitedAddressSpace = 1LL << 50;
// A bound on large_segment_bytes that keeps every sum far from overflow.
constexpr std::int64_t kLargestSegment = std::int64_t{1} << 40;
// AllocatorConfig::roundup_power2_divisions(size): interval 0 starts at 1 MiB = 2^20.
constexpr int kRoundupFirstLog2 = 20;

constexpr std::int64_t round_up(std::int64_t n, std::int64_t multiple) {
  return (n + multiple - 1) / multiple * multiple;
}

int floor_log2(std::int64_t n) { return 63 - std::countl_zero(static_cast<std::uint64_t>(n)); }

// roundup_power2_next_division: the next of `divisions` equal steps between the powers of two
// around `size` (1200 with 4 divisions: 1024, 1280, 1536, 1792 → 1280).
std::int64_t roundup_power2_next_division(std::int64_t size, std::int64_t divisions) {
  const auto usize = static_cast<std::uint64_t>(size);
  if (std::has_single_bit(usize)) return size;
  const auto power2_floor = static_cast<std::int64_t>(std::bit_floor(usize));
  const std::int64_t step = power2_floor >> floor_log2(divisions);
  if (step == 0) return power2_floor << 1;
  const std::int64_t floor = size & ~(step - 1);
  return floor == size ? size : floor + step;
}

// round_size.
std::int64_t round_size(std::int64_t size, const AllocatorOptions& o) {
  if (size < kMinBlockSize) return kMinBlockSize;
  const int interval = std::clamp(floor_log2(size) - kRoundupFirstLog2, 0, kRoundupIntervalCount - 1);
  const std::int64_t divisions = o.roundup_power2_divisions[static_cast<std::size_t>(interval)];
  if (divisions > 1 && size > kMinBlockSize * divisions) return roundup_power2_next_division(size, divisions);
  return round_up(size, kMinBlockSize);
}

// get_allocation_size.
std::int64_t allocation_size(std::int64_t size, const AllocatorOptions& o) {
  if (size <= kSmallSize) return kSmallBuffer;
  if (size < kMinLargeAlloc) return o.large_segment_bytes.value();
  return round_up(size, kRoundLarge);
}

bool is_power_of_two(std::int64_t n) { return n > 0 && std::has_single_bit(static_cast<std::uint64_t>(n)); }

// The options as the allocator uses them: out-of-range values clamped to the nearest accepted one.
AllocatorOptions sanitized(AllocatorOptions o) {
  const auto at_least = [](Bytes b, std::int64_t low) {
    return Bytes{b.overflow() ? INT64_MAX : std::max(b.value(), low)};
  };
  o.max_split_size_bytes = at_least(o.max_split_size_bytes, kLargeBuffer);
  // Far above any request (< 1 EiB), so request + rounding never overflows.
  o.max_non_split_rounding_bytes =
      Bytes{std::min(at_least(o.max_non_split_rounding_bytes, kLargeBuffer).value(), kLargestRequest)};
  const std::int64_t large = at_least(o.large_segment_bytes, kMinLargeAlloc).value();
  o.large_segment_bytes = Bytes{round_up(std::min(large, kLargestSegment), kRoundLarge)};
  o.device_capacity_bytes = at_least(o.device_capacity_bytes, 0);
  for (auto& d : o.roundup_power2_divisions) {
    d = d <= 1 ? 0 : static_cast<std::int32_t>(std::bit_floor(static_cast<std::uint32_t>(d)));
  }
  o.timeline_stride = std::max<std::int64_t>(o.timeline_stride, 0);
  return o;
}

}  // namespace

std::string allocator_options_error(const AllocatorOptions& o) {
  if (o.max_split_size_bytes.overflow() || o.max_split_size_bytes.value() < kLargeBuffer)
    return "max_split_size must be at least 20 MiB";
  if (o.max_non_split_rounding_bytes.overflow() || o.max_non_split_rounding_bytes.value() < kLargeBuffer)
    return "max_non_split_rounding must be at least 20 MiB";
  if (o.large_segment_bytes.overflow() || o.large_segment_bytes.value() < kMinLargeAlloc ||
      o.large_segment_bytes.value() % kRoundLarge != 0 || o.large_segment_bytes.value() > kLargestSegment)
    return "large_segment_bytes must be a multiple of 2 MiB from 10 MiB to 1 TiB";
  for (const std::int32_t d : o.roundup_power2_divisions) {
    if (d != 0 && !is_power_of_two(d)) return "roundup_power2_divisions must be 0 or a power of two";
  }
  if (o.device_capacity_bytes.overflow() || o.device_capacity_bytes.value() < 0)
    return "device_capacity_bytes must not be negative";
  if (o.timeline_stride < 0) return "timeline_stride must not be negative";
  return "";
}

Bytes allocator_block_bytes(Bytes request, const AllocatorOptions& options) {
  return Bytes{round_size(std::max<std::int64_t>(request.value(), 1), sanitized(options))};
}

Bytes allocator_segment_bytes(Bytes block_bytes, const AllocatorOptions& options) {
  return Bytes{allocation_size(block_bytes.value(), sanitized(options))};
}

void* NodeArena::take(std::size_t bytes) {
  // Nodes are spaced to the strictest fundamental alignment, as operator new aligns them.
  constexpr std::size_t align = alignof(std::max_align_t);
  if (node_bytes_ == 0) node_bytes_ = (bytes + align - 1) / align * align;
  if (bytes > node_bytes_ || bytes + align <= node_bytes_) return ::operator new(bytes);
  if (!free_nodes_.empty()) {
    void* node = free_nodes_.back();
    free_nodes_.pop_back();
    return node;
  }
  if (used_in_last_chunk_ == kNodesPerChunk) {
    chunks_.push_back(std::make_unique<std::byte[]>(node_bytes_ * kNodesPerChunk));
    used_in_last_chunk_ = 0;
  }
  return chunks_.back().get() + node_bytes_ * used_in_last_chunk_++;
}

void NodeArena::give(void* node, std::size_t bytes) {
  constexpr std::size_t align = alignof(std::max_align_t);
  if (bytes > node_bytes_ || bytes + align <= node_bytes_) {
    ::operator delete(node);
    return;
  }
  free_nodes_.push_back(node);
}

CachingAllocator::CachingAllocator(const AllocatorOptions& options)
    : options_(sanitized(options)),
      arena_(std::make_unique<NodeArena>()),
      pools_{Pool(true, arena_.get()), Pool(false, arena_.get())} {}

// ---- Block slots ----------------------------------------------------------------------------

std::int32_t CachingAllocator::new_block() {
  std::int32_t b;
  if (!free_slots_.empty()) {
    b = free_slots_.back();
    free_slots_.pop_back();
  } else {
    b = static_cast<std::int32_t>(blocks_.size());
    blocks_.emplace_back();
  }
  const std::uint32_t generation = blocks_[b].generation;
  blocks_[b] = Block{};
  blocks_[b].generation = generation;
  blocks_[b].live = true;
  return b;
}

void CachingAllocator::delete_block(std::int32_t b) {
  blocks_[b].live = false;
  ++blocks_[b].generation;
  free_slots_.push_back(b);
}

void CachingAllocator::cache(std::int32_t b) {
  Pool& pool = pool_of(blocks_[b]);
  if (blocks_[b].mapped) blocks_[b].cached = pool.free_blocks.insert(key(b)).first;
  else pool.unmapped.insert(key(b));
}

void CachingAllocator::uncache(std::int32_t b) {
  Pool& pool = pool_of(blocks_[b]);
  if (blocks_[b].mapped) {
    pool.free_blocks.erase(blocks_[b].cached);
    blocks_[b].cached = {};  // an erased iterator may not even be copied (the slot vector grows)
  } else {
    pool.unmapped.erase(key(b));
  }
}

// ---- malloc ---------------------------------------------------------------------------------

Handle CachingAllocator::allocate(Bytes bytes) {
  Handle h;
  const std::int64_t requested = bytes.value();
  if (bytes.overflow() || requested < 0) {
    h.error = AllocError::kInvalidSize;
  } else if (requested >= kLargestRequest) {
    ++oom_count_;
    h.error = AllocError::kOutOfMemory;
  } else if (requested > 0) {
    // malloc: round, pick the pool, search it; else cudaMalloc a segment, else free what the cache
    // holds and try again.
    const std::int64_t size = round_size(requested, options_);
    Pool& pool = pools_[size <= kSmallSize ? 0 : 1];
    const std::int64_t segment_bytes = allocation_size(size, options_);
    std::int32_t b = get_free_block(pool, size);
    if (b < 0) b = alloc_block(pool, size, segment_bytes, false);
    if (b < 0 && release_available_cached_blocks(pool, size)) b = alloc_block(pool, size, segment_bytes, false);
    if (b < 0) {
      release_cached_blocks();
      b = alloc_block(pool, size, segment_bytes, true);
    }
    if (b < 0) {
      ++oom_count_;
      h.error = AllocError::kOutOfMemory;
    } else {
      b = alloc_found_block(b, size, requested);
      h.block = b;
      h.generation = blocks_[b].generation;
    }
  }
  note_event();
  return h;
}

// get_free_block: the smallest cached block of at least `size` bytes, the lowest address among
// equals; under the max_split_size rules.
std::int32_t CachingAllocator::get_free_block(Pool& pool, std::int64_t size) {
  auto it = pool.free_blocks.lower_bound(CachedBlock{size, INT64_MIN, -1});
  if (it == pool.free_blocks.end()) return -1;
  if (options_.segment_mode == SegmentMode::kExpandable) {
    // A block that can still grow into unmapped pages counts as that much larger, so best fit
    // prefers blocks that cannot grow and leaves the end of the segment to grow.
    const auto expandable_size = [this](const CachedBlock& c) {
      const Block& b = blocks_[c.block];
      return b.size + (b.next >= 0 && !blocks_[b.next].mapped ? blocks_[b.next].size : 0);
    };
    for (auto next = std::next(it); next != pool.free_blocks.end() && expandable_size(*next) < expandable_size(*it);
         ++next) {
      it = next;
    }
  }
  const std::int64_t max_split = options_.max_split_size_bytes.value();
  // Do not return an oversized block for a small request.
  if (size < max_split && it->size >= max_split) return -1;
  // An oversized request takes an oversized block only if it wastes less than the rounding limit.
  if (size >= max_split && it->size >= size + options_.max_non_split_rounding_bytes.value()) return -1;
  const std::int32_t b = it->block;
  uncache(b);
  return b;
}

// should_split.
bool CachingAllocator::should_split(std::int32_t b, std::int64_t size) const {
  const std::int64_t remaining = blocks_[b].size - size;
  const bool small = segments_[blocks_[b].segment].small;
  if (small || options_.segment_mode == SegmentMode::kExpandable) return remaining >= kMinBlockSize;
  return size < options_.max_split_size_bytes.value() && remaining > kSmallSize;
}

// alloc_found_block: the front of the block serves the request; the rest, if worth keeping apart,
// goes back to the pool.
std::int32_t CachingAllocator::alloc_found_block(std::int32_t b, std::int64_t size, std::int64_t requested) {
  if (should_split(b, size)) {
    const std::int32_t remaining = b;
    b = new_block();
    Block& front = blocks_[b];
    Block& rest = blocks_[remaining];
    front.address = rest.address;
    front.size = size;
    front.segment = rest.segment;
    front.prev = rest.prev;
    front.next = remaining;
    if (front.prev >= 0) blocks_[front.prev].next = b;
    rest.prev = b;
    rest.address += size;
    rest.size -= size;
    cache(remaining);
  }
  Block& block = blocks_[b];
  block.allocated = true;
  block.requested = requested;
  ++block.generation;
  allocated_bytes_ += block.size;
  requested_bytes_ += requested;
  peak_allocated_bytes_ = std::max(peak_allocated_bytes_, allocated_bytes_);
  peak_requested_bytes_ = std::max(peak_requested_bytes_, requested_bytes_);
  return b;
}

// ---- free -----------------------------------------------------------------------------------

const CachingAllocator::Block* CachingAllocator::live_block(Handle h) const {
  if (!h.ok() || h.block < 0 || static_cast<std::size_t>(h.block) >= blocks_.size()) return nullptr;
  const Block& block = blocks_[h.block];
  return block.live && block.allocated && !block.pending && block.generation == h.generation ? &block : nullptr;
}

bool CachingAllocator::free(Handle h) { return release(h, false); }

bool CachingAllocator::free_recorded(Handle h) { return release(h, true); }

// DeviceCachingAllocator::free: the stats drop at once; the block is cached, or, recorded on
// another stream, kept out of the pools (and unmerged) until its events pass (insert_events).
bool CachingAllocator::release(Handle h, bool recorded) {
  if (h.ok() && h.block == -1) {
    // A zero-byte allocation frees as a no-op, as a null DataPtr does.
    note_event();
    return true;
  }
  if (live_block(h) == nullptr) return false;
  Block& block = blocks_[h.block];
  allocated_bytes_ -= block.size;
  requested_bytes_ -= block.requested;
  block.requested = 0;
  if (recorded) {
    block.pending = true;
    pending_bytes_ += block.size;
    pending_.push_back(h.block);
  } else {
    block.allocated = false;
    free_block(h.block);
  }
  note_event();
  return true;
}

void CachingAllocator::synchronize_and_free_events() {
  for (const std::int32_t b : pending_) {
    blocks_[b].pending = false;
    blocks_[b].allocated = false;
    free_block(b);
  }
  pending_.clear();
  pending_bytes_ = 0;
}

// free_block: merge with free neighbours in the same segment, then cache.
void CachingAllocator::free_block(std::int32_t b) {
  try_merge_blocks(b, blocks_[b].prev);
  try_merge_blocks(b, blocks_[b].next);
  cache(b);
}

// try_merge_blocks: `src` (a neighbour of `dst`) is absorbed when it is free and mapped alike.
std::int64_t CachingAllocator::try_merge_blocks(std::int32_t dst, std::int32_t src) {
  if (src < 0 || blocks_[src].allocated || blocks_[src].mapped != blocks_[dst].mapped) return 0;
  uncache(src);
  Block& d = blocks_[dst];
  const Block& s = blocks_[src];
  if (d.prev == src) {
    d.address = s.address;
    d.prev = s.prev;
    if (d.prev >= 0) blocks_[d.prev].next = dst;
  } else {
    d.next = s.next;
    if (d.next >= 0) blocks_[d.next].prev = dst;
  }
  const std::int64_t subsumed = s.size;
  d.size += subsumed;
  delete_block(src);
  return subsumed;
}

// ---- New memory from the device -------------------------------------------------------------

bool CachingAllocator::device_has_room(std::int64_t bytes) const {
  return bytes <= options_.device_capacity_bytes.value() - reserved_bytes_;
}

void CachingAllocator::add_reserved(std::int64_t bytes) {
  reserved_bytes_ += bytes;
  peak_reserved_bytes_ = std::max(peak_reserved_bytes_, reserved_bytes_);
  event_high_reserved_bytes_ = std::max(event_high_reserved_bytes_, reserved_bytes_);
  ++device_alloc_count_;
}

// alloc_block: a new cudaMalloc segment of `segment_bytes` (a free block, not yet in the pool), or
// under expandable segments `size` more bytes mapped; -1 when the device has no room.
std::int32_t CachingAllocator::alloc_block(Pool& pool, std::int64_t size, std::int64_t segment_bytes,
                                           bool is_retry) {
  if (is_retry) ++alloc_retry_count_;
  if (options_.segment_mode == SegmentMode::kExpandable) return try_allocate_expandable_block(pool, size);
  if (!device_has_room(segment_bytes)) return -1;
  Segment s;
  s.base = next_address_;
  s.size = segment_bytes;
  s.small = pool.small;
  next_address_ += segment_bytes;
  segments_.push_back(s);
  const std::int32_t b = new_block();
  blocks_[b].address = s.base;
  blocks_[b].size = segment_bytes;
  blocks_[b].segment = static_cast<std::int32_t>(segments_.size() - 1);
  add_reserved(segment_bytes);
  ++segment_count_;
  peak_segment_count_ = std::max(peak_segment_count_, segment_count_);
  return b;
}

// try_allocate_expandable_block: map pages at the lowest address where free and unmapped space
// together fit `size`, merging them into one free block, which is returned (not in the pool).
std::int32_t CachingAllocator::try_allocate_expandable_block(Pool& pool, std::int64_t size) {
  std::int32_t candidate = find_expandable_block(pool, size);
  if (!blocks_[candidate].mapped && !map_block(candidate, std::min(blocks_[candidate].size, size))) return -1;
  while (blocks_[candidate].size < size) {
    // candidate is free and mapped, its next unmapped: map what is missing, which merges into it.
    const std::int32_t next = blocks_[candidate].next;
    if (!map_block(next, std::min(size - blocks_[candidate].size, blocks_[next].size))) return -1;
    candidate = next;
  }
  uncache(candidate);
  return candidate;
}

// find_expandable_block: the lowest-addressed unmapped range (with the free block just before it,
// if any) that has room for `size`; else a new expandable segment.
std::int32_t CachingAllocator::find_expandable_block(Pool& pool, std::int64_t size) {
  const auto available = [this](std::int32_t b) { return b >= 0 && !blocks_[b].allocated; };
  for (const CachedBlock& c : pool.unmapped) {
    std::int32_t b = c.block;
    if (available(blocks_[b].prev)) b = blocks_[b].prev;
    std::int64_t bytes = 0;
    for (std::int32_t walk = b; bytes < size && available(walk); walk = blocks_[walk].next) {
      bytes += blocks_[walk].size;
    }
    if (bytes >= size) return b;
  }
  // Small pool pages are 2 MiB, large pool pages kLargeBuffer; the range covers 9/8 of the card.
  Segment s;
  s.page_bytes = pool.small ? kSmallBuffer : options_.large_segment_bytes.value();
  const std::int64_t capacity = options_.device_capacity_bytes.value();
  const std::int64_t space = capacity >= kUnlimitedAddressSpace ? kUnlimitedAddressSpace : capacity + capacity / 8;
  s.size = std::max<std::int64_t>(round_up(space, s.page_bytes), s.page_bytes);
  s.base = next_address_;
  s.small = pool.small;
  s.expandable = true;
  next_address_ += s.size;
  segments_.push_back(s);
  ++segment_count_;
  peak_segment_count_ = std::max(peak_segment_count_, segment_count_);
  const std::int32_t b = new_block();
  blocks_[b].address = s.base;
  blocks_[b].size = s.size;
  blocks_[b].segment = static_cast<std::int32_t>(segments_.size() - 1);
  blocks_[b].mapped = false;
  cache(b);
  return b;
}

// map_block: back the first `size` bytes of unmapped block `b` (whole pages) with memory; the rest
// stays unmapped after it. The mapped part merges with a free neighbour and is cached.
bool CachingAllocator::map_block(std::int32_t b, std::int64_t size) {
  const Segment& segment = segments_[blocks_[b].segment];
  const std::int64_t mapped = round_up(size, segment.page_bytes);
  // ExpandableSegment::map creates one page at a time and gives them all back on failure.
  if (!device_has_room(mapped)) return false;
  uncache(b);
  blocks_[b].mapped = true;
  if (mapped < blocks_[b].size) {
    const std::int32_t rest = new_block();
    Block& r = blocks_[rest];
    Block& m = blocks_[b];
    r.address = m.address + mapped;
    r.size = m.size - mapped;
    r.segment = m.segment;
    r.mapped = false;
    r.prev = b;
    r.next = m.next;
    if (r.next >= 0) blocks_[r.next].prev = rest;
    m.next = rest;
    m.size = mapped;
    cache(rest);
  }
  try_merge_blocks(b, blocks_[b].prev);
  try_merge_blocks(b, blocks_[b].next);
  cache(b);
  add_reserved(mapped);
  return true;
}

// ---- Giving cached memory back when the device is full --------------------------------------

// release_available_cached_blocks: with max_split_size set, cudaFree one oversized cached block that
// covers the request, else the largest oversized ones until their sum does.
bool CachingAllocator::release_available_cached_blocks(Pool& pool, std::int64_t size) {
  const std::int64_t max_split = options_.max_split_size_bytes.value();
  // PyTorch asserts that release_block never sees an expandable block; we skip the step there.
  if (max_split == INT64_MAX || options_.segment_mode == SegmentMode::kExpandable) return false;
  const std::int64_t target = std::max(size, max_split);
  auto it = pool.free_blocks.lower_bound(CachedBlock{target, INT64_MIN, -1});
  if (it != pool.free_blocks.end()) {
    release_block(it->block);
    return true;
  }
  std::vector<std::int32_t> oversized;  // largest first
  std::int64_t released = 0;
  for (auto r = pool.free_blocks.rbegin(); r != pool.free_blocks.rend() && released < target && r->size >= max_split;
       ++r) {
    oversized.push_back(r->block);
    released += r->size;
  }
  for (const std::int32_t b : oversized) release_block(b);
  return released >= target;
}

// release_cached_blocks → release_blocks on both pools.
void CachingAllocator::release_cached_blocks() {
  synchronize_and_free_events();
  release_blocks(pools_[1]);
  release_blocks(pools_[0]);
}

// release_blocks: cudaFree every cached block that is a whole segment; unmap the whole free pages
// of expandable segments (and drop an expandable segment left with nothing mapped).
void CachingAllocator::release_blocks(Pool& pool) {
  std::vector<std::int32_t> candidates;
  candidates.reserve(pool.free_blocks.size());
  for (const CachedBlock& c : pool.free_blocks) candidates.push_back(c.block);
  for (const std::int32_t b : candidates) {
    if (segments_[blocks_[b].segment].expandable) {
      unmap_block(b);
      if (!blocks_[b].mapped && blocks_[b].prev < 0 && blocks_[b].next < 0) {
        // release_expandable_segment.
        uncache(b);
        segments_[blocks_[b].segment].live = false;
        --segment_count_;
        delete_block(b);
      }
    } else if (blocks_[b].prev < 0 && blocks_[b].next < 0) {
      release_block(b);
    }
  }
}

// release_block: cudaFree a cached block that is a whole segment.
void CachingAllocator::release_block(std::int32_t b) {
  Block& block = blocks_[b];
  if (block.prev >= 0 || block.next >= 0) return;  // never reached: oversized blocks are never split
  uncache(b);
  reserved_bytes_ -= block.size;
  segments_[block.segment].live = false;
  --segment_count_;
  ++device_free_count_;
  delete_block(b);
}

// unmap_block: give back the whole pages inside free block `b`; the slivers before and after them
// stay mapped and free, and the unmapped part merges with unmapped neighbours.
void CachingAllocator::unmap_block(std::int32_t b) {
  const Segment& segment = segments_[blocks_[b].segment];
  const std::int64_t page = segment.page_bytes;
  const std::int64_t begin = segment.base + round_up(blocks_[b].address - segment.base, page);
  const std::int64_t end = segment.base + (blocks_[b].address + blocks_[b].size - segment.base) / page * page;
  if (begin >= end) return;
  uncache(b);
  const std::int64_t before = begin - blocks_[b].address;
  const std::int64_t after = blocks_[b].address + blocks_[b].size - end;
  if (before > 0) {
    const std::int32_t f = new_block();
    Block& s = blocks_[f];
    s.address = blocks_[b].address;
    s.size = before;
    s.segment = blocks_[b].segment;
    s.prev = blocks_[b].prev;
    s.next = b;
    if (s.prev >= 0) blocks_[s.prev].next = f;
    blocks_[b].prev = f;
    cache(f);
  }
  if (after > 0) {
    const std::int32_t f = new_block();
    Block& s = blocks_[f];
    s.address = end;
    s.size = after;
    s.segment = blocks_[b].segment;
    s.prev = b;
    s.next = blocks_[b].next;
    if (s.next >= 0) blocks_[s.next].prev = f;
    blocks_[b].next = f;
    cache(f);
  }
  blocks_[b].address = begin;
  blocks_[b].size = end - begin;
  blocks_[b].mapped = false;
  try_merge_blocks(b, blocks_[b].prev);
  try_merge_blocks(b, blocks_[b].next);
  cache(b);
  reserved_bytes_ -= end - begin;
  ++device_free_count_;
}

// ---- Statistics -----------------------------------------------------------------------------

// Reserved can peak inside an event (pages mapped, then given back to retry) and the peak counts
// that; so does the timeline.
void CachingAllocator::note_event() {
  const std::int64_t stride = options_.timeline_stride;
  const std::int64_t reserved_high = std::max(event_high_reserved_bytes_, reserved_bytes_);
  if (stride > 0) {
    if (event_count_ % stride == 0) {
      timeline_.push_back({event_count_, Bytes{allocated_bytes_}, Bytes{reserved_high}});
    } else {
      TimelinePoint& p = timeline_.back();
      p.allocated_bytes = Bytes{std::max(p.allocated_bytes.value(), allocated_bytes_)};
      p.reserved_bytes = Bytes{std::max(p.reserved_bytes.value(), reserved_high)};
    }
  }
  event_high_reserved_bytes_ = reserved_bytes_;
  ++event_count_;
}

std::int64_t CachingAllocator::block_address(Handle h) const {
  const Block* b = live_block(h);
  return b != nullptr ? b->address : -1;
}

Bytes CachingAllocator::block_bytes(Handle h) const {
  const Block* b = live_block(h);
  return Bytes{b != nullptr ? b->size : 0};
}

Bytes CachingAllocator::largest_free_block_bytes() const {
  std::int64_t largest = 0;
  for (const Pool& pool : pools_) {
    if (!pool.free_blocks.empty()) largest = std::max(largest, pool.free_blocks.rbegin()->size);
  }
  return Bytes{largest};
}

AllocatorStats CachingAllocator::stats() const {
  AllocatorStats s;
  s.allocated_bytes = Bytes{allocated_bytes_};
  s.reserved_bytes = Bytes{reserved_bytes_};
  s.requested_bytes = Bytes{requested_bytes_};
  s.peak_allocated_bytes = Bytes{peak_allocated_bytes_};
  s.peak_reserved_bytes = Bytes{peak_reserved_bytes_};
  s.peak_requested_bytes = Bytes{peak_requested_bytes_};
  s.largest_free_block_bytes = largest_free_block_bytes();
  s.segment_count = Count{segment_count_};
  s.peak_segment_count = Count{peak_segment_count_};
  s.device_alloc_count = Count{device_alloc_count_};
  s.device_free_count = Count{device_free_count_};
  s.alloc_retry_count = Count{alloc_retry_count_};
  s.oom_count = Count{oom_count_};
  s.event_count = Count{event_count_};
  s.timeline = timeline_;
  return s;
}

std::string CachingAllocator::check_invariants() const {
  std::vector<std::vector<std::int32_t>> by_segment(segments_.size());
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    if (!blocks_[b].live) continue;
    by_segment[static_cast<std::size_t>(blocks_[b].segment)].push_back(static_cast<std::int32_t>(b));
  }
  std::int64_t allocated = 0, requested = 0, mapped = 0, cached = 0, unmapped = 0, live_segments = 0, pending = 0;
  for (std::size_t s = 0; s < segments_.size(); ++s) {
    const Segment& segment = segments_[s];
    auto& list = by_segment[s];
    if (!segment.live) {
      if (!list.empty()) return "a released segment still holds blocks";
      continue;
    }
    ++live_segments;
    if (list.empty()) return "a live segment holds no block";
    std::sort(list.begin(), list.end(),
              [this](std::int32_t a, std::int32_t b) { return blocks_[a].address < blocks_[b].address; });
    std::int64_t at = segment.base;
    for (std::size_t i = 0; i < list.size(); ++i) {
      const Block& b = blocks_[list[i]];
      if (b.address != at) return "blocks leave a gap or overlap in a segment";
      if (b.size <= 0 || b.size % kMinBlockSize != 0) return "a block size is not a positive multiple of 512";
      if (b.prev != (i == 0 ? -1 : list[i - 1]) || b.next != (i + 1 == list.size() ? -1 : list[i + 1]))
        return "prev/next links disagree with address order";
      at += b.size;
      if (!segment.expandable && !b.mapped) return "an unmapped block outside an expandable segment";
      if (b.allocated) {
        if (!b.mapped) return "an allocated block is unmapped";
        if (b.pending) {
          pending += b.size;
          if (b.requested != 0) return "a block waiting on events still counts its request";
        } else {
          allocated += b.size;
          requested += b.requested;
        }
      }
      if (b.mapped) mapped += b.size;
      const Pool& pool = pools_[segment.small ? 0 : 1];
      const CachedBlock k = key(list[i]);
      if (!b.allocated) {
        const bool found = b.mapped ? (pool.free_blocks.count(k) == 1 && b.cached->block == list[i] &&
                                       b.cached->size == b.size && b.cached->address == b.address)
                                    : (pool.unmapped.count(k) == 1 && pool.unmapped.find(k)->block == list[i]);
        if (!found) return "a free block is not cached in its pool";
        (b.mapped ? cached : unmapped) += 1;
        if (i > 0 && !blocks_[list[i - 1]].allocated && blocks_[list[i - 1]].mapped == b.mapped)
          return "two free neighbours were left unmerged";
      }
    }
    if (at != segment.base + segment.size) return "blocks do not cover their segment";
  }
  std::int64_t cached_total = 0, unmapped_total = 0;
  for (const Pool& pool : pools_) {
    cached_total += static_cast<std::int64_t>(pool.free_blocks.size());
    unmapped_total += static_cast<std::int64_t>(pool.unmapped.size());
  }
  if (cached != cached_total || unmapped != unmapped_total) return "a pool caches a block that is not free";
  if (allocated != allocated_bytes_) return "allocated bytes disagree with the blocks";
  if (pending != pending_bytes_) return "bytes waiting on events disagree with the blocks";
  if (requested != requested_bytes_) return "requested bytes disagree with the blocks";
  if (mapped != reserved_bytes_) return "reserved bytes disagree with the segments";
  if (live_segments != segment_count_) return "segment count disagrees with the segments";
  return "";
}

// ---- Replay ---------------------------------------------------------------------------------

namespace {

// The live allocations of a replay by id: a flat table when ids are small and dense (the usual
// case: tensors numbered in order), else a hash map.
class LiveTable {
 public:
  explicit LiveTable(const std::vector<AllocatorEvent>& events) {
    std::int64_t low = 0, high = -1;
    for (const AllocatorEvent& e : events) {
      low = std::min(low, e.id);
      high = std::max(high, e.id);
    }
    const auto dense_limit = static_cast<std::int64_t>(4 * events.size() + 64);
    dense_ = low >= 0 && high < dense_limit;
    if (dense_) slots_.assign(static_cast<std::size_t>(high + 1), kAbsent);
    else map_.reserve(events.size());
  }
  // The slot for a new id, or nullptr when the id is live already.
  Handle* add(std::int64_t id) {
    if (dense_) {
      Handle& h = slots_[static_cast<std::size_t>(id)];
      return h.block == kAbsent.block ? &h : nullptr;
    }
    const auto [it, inserted] = map_.try_emplace(id, Handle{});
    return inserted ? &it->second : nullptr;
  }
  // Takes a live id's handle out; false when the id is not live.
  bool remove(std::int64_t id, Handle& out) {
    if (dense_) {
      const auto index = static_cast<std::size_t>(id);
      if (id < 0 || index >= slots_.size() || slots_[index].block == kAbsent.block) return false;
      out = std::exchange(slots_[index], kAbsent);
      return true;
    }
    const auto it = map_.find(id);
    if (it == map_.end()) return false;
    out = it->second;
    map_.erase(it);
    return true;
  }
  void drop(std::int64_t id) {
    Handle unused;
    remove(id, unused);
  }

 private:
  static constexpr Handle kAbsent{-2, 0, AllocError::kNone};
  bool dense_ = false;
  std::vector<Handle> slots_;
  std::unordered_map<std::int64_t, Handle> map_;
};

}  // namespace

ReplayResult replay(const std::vector<AllocatorEvent>& events, const AllocatorOptions& options) {
  ReplayResult result;
  if (!allocator_options_error(options).empty()) {
    result.status = ReplayStatus::kInvalidOptions;
    return result;
  }
  CachingAllocator allocator(options);
  if (allocator.options_.timeline_stride > 0) {
    const auto stride = static_cast<std::size_t>(allocator.options_.timeline_stride);
    allocator.timeline_.reserve(events.size() / stride + 1);
  }
  LiveTable live(events);
  const auto fail = [&result](ReplayStatus status, std::size_t index) {
    result.status = status;
    result.failed_event_index = static_cast<std::int64_t>(index);
  };
  for (std::size_t i = 0; i < events.size(); ++i) {
    const AllocatorEvent& e = events[i];
    if (e.kind == AllocatorEventKind::kAlloc) {
      Handle* slot = live.add(e.id);
      if (slot == nullptr) {
        fail(ReplayStatus::kDuplicateId, i);
        break;
      }
      *slot = allocator.allocate(e.bytes);
      if (!slot->ok()) {
        const bool oom = slot->error == AllocError::kOutOfMemory;
        fail(oom ? ReplayStatus::kOutOfMemory : ReplayStatus::kInvalidSize, i);
        live.drop(e.id);
        break;
      }
    } else {
      Handle h;
      if (!live.remove(e.id, h)) {
        fail(ReplayStatus::kUnknownId, i);
        break;
      }
      allocator.free(h);
    }
  }
  std::vector<TimelinePoint> timeline = std::move(allocator.timeline_);
  allocator.timeline_.clear();
  result.stats = allocator.stats();
  result.stats.timeline = std::move(timeline);
  return result;
}

}  // namespace memfit
