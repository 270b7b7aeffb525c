// A model of PyTorch's CUDA caching allocator: replay a training step's allocations and frees and
// read off what `torch.cuda.memory_allocated` / `memory_reserved` and their peaks would show.
//
// Source: c10/cuda/CUDACachingAllocator.cpp (DeviceCachingAllocator) and the allocator options in
// c10/core/AllocatorConfig.cpp, read at pytorch/pytorch 001074d25084fdb87a799823e395a50f5ec044d3
// (and checked against later revisions where they differ; see docs/allocator.md). Each rule in
// allocator.cpp names the PyTorch function it follows.
//
// One device, one stream, no CUDA graphs, no empty_cache and no garbage collection: a training
// step as the default allocator serves it. Deterministic: "addresses" are offsets in a virtual
// space, each new segment placed after the last (the order cudaMalloc tends to return them in),
// which decides best-fit ties exactly as PyTorch's (size, address) ordering does.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "memfit/units.hpp"

namespace memfit {

// How segments are obtained: PYTORCH_CUDA_ALLOC_CONF=expandable_segments:False | True.
enum class SegmentMode : std::uint8_t {
  kCudaMalloc,  // default: one cudaMalloc per segment; blocks never merge across segments
  kExpandable,  // one growing virtual range per pool, physical pages mapped at its end on demand
};

inline constexpr Bytes kUnlimitedBytes{INT64_MAX};
// kLargeBuffer: the segment a 1–10 MiB request gets, and PyTorch's default rounding limit.
inline constexpr Bytes kLargeBufferBytes{std::int64_t{20} << 20};
// roundup_power2_divisions is set per power-of-two interval of request sizes: interval i holds
// sizes in [2^(20+i), 2^(21+i)) bytes, the first also everything below 1 MiB and the last
// everything from 32 GiB up (AllocatorConfig::roundup_power2_divisions(size), 1 MiB .. 64 GiB).
inline constexpr int kRoundupIntervalCount = 16;

// The allocator's settings; defaults are PyTorch's. Field names follow PYTORCH_CUDA_ALLOC_CONF.
struct AllocatorOptions {
  SegmentMode segment_mode = SegmentMode::kCudaMalloc;
  // max_split_size_mb: cached blocks of at least this size are never split and only serve requests
  // of at least this size. PyTorch accepts 20 MiB and up; unlimited by default.
  Bytes max_split_size_bytes = kUnlimitedBytes;
  // max_non_split_rounding_mb: a request >= max_split_size takes a cached block only if the block is
  // less than this much larger. PyTorch's default is kLargeBuffer (20 MiB); it accepts >= 20 MiB.
  Bytes max_non_split_rounding_bytes = kLargeBufferBytes;
  // kLargeBuffer (large_segment_size in newer PyTorch): the segment cut for a 1–10 MiB request, and
  // the page the large pool maps at a time under expandable segments. A multiple of 2 MiB, >= 10 MiB.
  Bytes large_segment_bytes = kLargeBufferBytes;
  // roundup_power2_divisions, per interval (see kRoundupIntervalCount): 0 or 1 = plain 512-byte
  // rounding; otherwise a power of two d, and a request above 512·d bytes rounds up to the next of
  // d equal steps between the powers of two around it (d = 4: 5000 → 5120, steps of 1024).
  std::array<std::int32_t, kRoundupIntervalCount> roundup_power2_divisions{};
  // What cudaMalloc / cuMemCreate may hand out in all (the card minus the CUDA context and anything
  // outside PyTorch). Past it the allocator frees its unused cached segments and retries, then
  // reports out of memory, as PyTorch's malloc does. Unlimited: reserved only grows.
  Bytes device_capacity_bytes = kUnlimitedBytes;
  // One timeline point per this many events (each point holds the highest allocated and reserved
  // bytes seen in its window, so no peak is lost to sampling); 0 = no timeline.
  std::int64_t timeline_stride = 1;
};

// Why `options` cannot be used, or "" when they can (the ranges PyTorch's config parser enforces).
std::string allocator_options_error(const AllocatorOptions& options);

// The block size a request occupies (round_size): at least 512 bytes, a multiple of 512, or the
// next power-of-two division when roundup_power2_divisions applies.
Bytes allocator_block_bytes(Bytes request, const AllocatorOptions& options);
// The segment cudaMalloc'ed when no cached block fits a block of `block_bytes` (get_allocation_size):
// 2 MiB for the small pool (<= 1 MiB), large_segment_bytes below 10 MiB, else rounded up to 2 MiB.
Bytes allocator_segment_bytes(Bytes block_bytes, const AllocatorOptions& options);

enum class AllocError : std::uint8_t {
  kNone,
  kOutOfMemory,  // no cached block fits and the device has no room, even after freeing the cache
  kInvalidSize,  // negative or overflowed byte count
};

// What allocate() hands back: the block to free later, or why there is none. A zero-byte request
// succeeds without a block (PyTorch returns a null pointer and never calls its malloc).
struct Handle {
  std::int32_t block = -1;
  std::uint32_t generation = 0;
  AllocError error = AllocError::kNone;
  bool ok() const { return error == AllocError::kNone; }
};

// One point of the allocated / reserved timeline: the highest values over the events
// [event_index, event_index + timeline_stride).
struct TimelinePoint {
  std::int64_t event_index = 0;
  Bytes allocated_bytes;
  Bytes reserved_bytes;
};

// The counters torch.cuda.memory_stats() reports (aggregate pool), with their PyTorch names.
struct AllocatorStats {
  Bytes allocated_bytes;           // allocated_bytes.all.current: live blocks, rounded
  Bytes reserved_bytes;            // reserved_bytes.all.current: segments (mapped pages)
  Bytes requested_bytes;           // requested_bytes.all.current: live requests as asked
  Bytes peak_allocated_bytes;      // allocated_bytes.all.peak = torch.cuda.max_memory_allocated()
  Bytes peak_reserved_bytes;       // reserved_bytes.all.peak = torch.cuda.max_memory_reserved()
  Bytes peak_requested_bytes;      // requested_bytes.all.peak
  Bytes largest_free_block_bytes;  // cacheInfo: the largest cached block not in use
  Count segment_count;             // segment.all.current (expandable: virtual ranges)
  Count peak_segment_count;        // segment.all.peak
  Count device_alloc_count;        // num_device_alloc: cudaMalloc calls or page ranges mapped
  Count device_free_count;         // num_device_free: cudaFree calls or page ranges unmapped
  Count alloc_retry_count;         // num_alloc_retries: mallocs that freed the cache to retry
  Count oom_count;                 // num_ooms
  Count event_count;               // allocate and free calls seen
  std::vector<TimelinePoint> timeline;
};

struct AllocatorEvent;
struct ReplayResult;

// Recycles the nodes of the allocator's ordered sets, so that a replay asks the heap for memory
// only while its count of cached blocks reaches a new high. Nodes of one size come from chunks;
// any other size goes to operator new.
class NodeArena {
 public:
  void* take(std::size_t bytes);
  void give(void* node, std::size_t bytes);

 private:
  static constexpr std::size_t kNodesPerChunk = 256;
  std::size_t node_bytes_ = 0;  // fixed by the first request
  std::vector<void*> free_nodes_;
  std::vector<std::unique_ptr<std::byte[]>> chunks_;
  std::size_t used_in_last_chunk_ = kNodesPerChunk;
};

template <class T>
struct ArenaAllocator {
  using value_type = T;
  NodeArena* arena = nullptr;
  explicit ArenaAllocator(NodeArena* a) : arena(a) {}
  template <class U>
  ArenaAllocator(const ArenaAllocator<U>& other) : arena(other.arena) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(arena->take(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { arena->give(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const ArenaAllocator<U>& other) const { return arena == other.arena; }
};

class CachingAllocator {
 public:
  // `options` should pass allocator_options_error; values out of range are clamped to the
  // nearest accepted one.
  explicit CachingAllocator(const AllocatorOptions& options = {});
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;
  CachingAllocator(CachingAllocator&&) = default;  // the arena moves with the sets that use it
  CachingAllocator& operator=(CachingAllocator&&) = delete;

  // DeviceCachingAllocator::malloc for `bytes` as the tensor asked for them.
  Handle allocate(Bytes bytes);
  // DeviceCachingAllocator::free. False (and nothing changes) when `handle` is not a live
  // allocation: freed already, failed, or from another allocator.
  bool free(Handle handle);
  // free() of a block recorded on another stream (Tensor.record_stream): PyTorch's free() drops it
  // from allocated_bytes at once (max_memory_allocated never sees it) but, its stream_uses not
  // empty, inserts events instead of caching it (insert_events); the block is reused only after
  // the events complete. The model takes the GPU to be behind the CPU: they complete when the
  // allocator synchronizes. False when `handle` is not a live allocation.
  bool free_recorded(Handle handle);
  // synchronize_and_free_events: wait for every outstanding event and cache the blocks they held
  // (release_cached_blocks does this first when cudaMalloc fails; a caller that synchronizes the
  // device, e.g. by reading a loss, has the same effect at the next malloc's process_events).
  void synchronize_and_free_events();
  // Freed blocks still waiting on their events (active, not allocated).
  Bytes pending_bytes() const { return Bytes{pending_bytes_}; }

  // What the device may hand out from now on (two allocators that share one card: each is given
  // the card less what the other holds before it asks).
  void set_device_capacity(Bytes bytes) { options_.device_capacity_bytes = bytes; }
  // torch.cuda.empty_cache: wait for outstanding events, then give back every cached block that is
  // a whole segment (release_cached_blocks).
  void empty_cache() { release_cached_blocks(); }

  Bytes allocated_bytes() const { return Bytes{allocated_bytes_}; }
  Bytes reserved_bytes() const { return Bytes{reserved_bytes_}; }
  Bytes requested_bytes() const { return Bytes{requested_bytes_}; }
  Bytes peak_allocated_bytes() const { return Bytes{peak_allocated_bytes_}; }
  Bytes peak_reserved_bytes() const { return Bytes{peak_reserved_bytes_}; }
  Bytes largest_free_block_bytes() const;
  Count segment_count() const { return Count{segment_count_}; }
  AllocatorStats stats() const;

  // The block behind a live allocation: where it starts in the model's virtual address space, and
  // its size (what allocated_bytes counts for it: the rounded request, or more when the rest of a
  // cached block was too small to split off). -1 and 0 when `handle` is not live.
  std::int64_t block_address(Handle handle) const;
  Bytes block_bytes(Handle handle) const;

  // The block layout's invariants, checked from scratch (for tests): blocks tile each segment
  // without gap or overlap and link in address order; each free block is cached in its pool under
  // its own size and address and no two free neighbours are left unmerged; the byte counters equal
  // the sums over blocks. "" when all hold, else the first broken one.
  std::string check_invariants() const;

 private:
  friend ReplayResult replay(const std::vector<AllocatorEvent>& events, const AllocatorOptions& options);

  // A cached block as PyTorch's BlockPool orders it: BlockComparatorSize (size, then address) for
  // free blocks, BlockComparatorAddress for an expandable segment's unmapped ranges.
  struct CachedBlock {
    std::int64_t size;
    std::int64_t address;
    std::int32_t block;
  };
  struct BySizeThenAddress {
    bool operator()(const CachedBlock& a, const CachedBlock& b) const {
      return a.size != b.size ? a.size < b.size : a.address < b.address;
    }
  };
  struct ByAddress {
    bool operator()(const CachedBlock& a, const CachedBlock& b) const { return a.address < b.address; }
  };
  using FreeSet = std::set<CachedBlock, BySizeThenAddress, ArenaAllocator<CachedBlock>>;
  using UnmappedSet = std::set<CachedBlock, ByAddress, ArenaAllocator<CachedBlock>>;
  struct Pool {
    Pool(bool is_small, NodeArena* arena)
        : small(is_small),
          free_blocks(ArenaAllocator<CachedBlock>(arena)),
          unmapped(ArenaAllocator<CachedBlock>(arena)) {}
    bool small;
    FreeSet free_blocks;   // BlockPool::blocks
    UnmappedSet unmapped;  // BlockPool::unmapped
  };
  struct Block {
    std::int64_t address = 0;
    std::int64_t size = 0;
    std::int64_t requested = 0;  // bytes asked for, while allocated
    FreeSet::iterator cached;    // where a free mapped block sits in its pool
    std::int32_t prev = -1;      // neighbours in the same segment, by address
    std::int32_t next = -1;
    std::int32_t segment = -1;
    std::uint32_t generation = 0;  // bumped whenever the slot is handed out, so stale handles fail
    bool allocated = false;
    bool mapped = true;  // false only for the unmapped rest of an expandable segment
    bool live = false;   // the slot holds a block (slots are reused)
    bool pending = false;  // freed, waiting on another stream's events (stays `allocated` for layout)
  };
  struct Segment {
    std::int64_t base = 0;
    std::int64_t size = 0;        // cudaMalloc size, or the expandable segment's address range
    std::int64_t page_bytes = 0;  // expandable only: the granularity pages are mapped in
    bool small = false;
    bool expandable = false;
    bool live = true;
  };

  const Block* live_block(Handle handle) const;
  bool release(Handle handle, bool recorded);  // free() and free_recorded()
  Pool& pool_of(const Block& b) { return pools_[segments_[b.segment].small ? 0 : 1]; }
  CachedBlock key(std::int32_t b) const { return {blocks_[b].size, blocks_[b].address, b}; }
  std::int32_t new_block();
  void delete_block(std::int32_t b);
  void cache(std::int32_t b);    // into its pool's free blocks, or unmapped ranges
  void uncache(std::int32_t b);  // out of it again

  std::int32_t get_free_block(Pool& pool, std::int64_t size);
  bool should_split(std::int32_t b, std::int64_t size) const;
  std::int32_t alloc_found_block(std::int32_t b, std::int64_t size, std::int64_t requested);
  void free_block(std::int32_t b);
  std::int64_t try_merge_blocks(std::int32_t dst, std::int32_t src);

  std::int32_t alloc_block(Pool& pool, std::int64_t size, std::int64_t segment_bytes, bool is_retry);
  std::int32_t try_allocate_expandable_block(Pool& pool, std::int64_t size);
  std::int32_t find_expandable_block(Pool& pool, std::int64_t size);
  bool map_block(std::int32_t b, std::int64_t size);
  bool release_available_cached_blocks(Pool& pool, std::int64_t size);
  void release_cached_blocks();
  void release_blocks(Pool& pool);
  void release_block(std::int32_t b);
  void unmap_block(std::int32_t b);

  bool device_has_room(std::int64_t bytes) const;
  void add_reserved(std::int64_t bytes);
  void note_event();

  AllocatorOptions options_;
  std::unique_ptr<NodeArena> arena_;  // before pools_, which allocate from it
  std::vector<Block> blocks_;
  std::vector<std::int32_t> free_slots_;
  std::vector<Segment> segments_;
  std::array<Pool, 2> pools_;  // [0] small (requests <= 1 MiB), [1] large
  std::int64_t next_address_ = 0;

  std::int64_t allocated_bytes_ = 0;
  std::int64_t reserved_bytes_ = 0;
  std::int64_t requested_bytes_ = 0;
  std::int64_t peak_allocated_bytes_ = 0;
  std::int64_t peak_reserved_bytes_ = 0;
  std::int64_t peak_requested_bytes_ = 0;
  std::int64_t event_high_reserved_bytes_ = 0;  // the highest reserved since the last event ended
  std::int64_t segment_count_ = 0;
  std::int64_t peak_segment_count_ = 0;
  std::int64_t device_alloc_count_ = 0;
  std::int64_t device_free_count_ = 0;
  std::int64_t alloc_retry_count_ = 0;
  std::int64_t oom_count_ = 0;
  std::int64_t event_count_ = 0;
  std::int64_t pending_bytes_ = 0;
  std::vector<std::int32_t> pending_;  // blocks freed with outstanding events, oldest first
  std::vector<TimelinePoint> timeline_;
};

// One step of a replay: a tensor's storage allocated, or freed. `id` names the tensor; a free names
// the id of a live allocation. Ids may be reused once freed.
enum class AllocatorEventKind : std::uint8_t { kAlloc, kFree };
struct AllocatorEvent {
  AllocatorEventKind kind = AllocatorEventKind::kAlloc;
  std::int64_t id = 0;
  Bytes bytes;  // requested bytes (allocations only)
};
inline AllocatorEvent alloc_event(std::int64_t id, Bytes bytes) {
  return {AllocatorEventKind::kAlloc, id, bytes};
}
inline AllocatorEvent free_event(std::int64_t id) { return {AllocatorEventKind::kFree, id, Bytes{0}}; }

enum class ReplayStatus : std::uint8_t {
  kOk,
  kInvalidOptions,  // see allocator_options_error
  kOutOfMemory,     // the event at failed_event_index could not be served: the step fails there
  kInvalidSize,     // negative or overflowed bytes
  kUnknownId,       // a free of an id that is not live
  kDuplicateId,     // an allocation under an id that is still live
};

struct ReplayResult {
  ReplayStatus status = ReplayStatus::kOk;
  std::int64_t failed_event_index = -1;  // the event the replay stopped at, -1 when it ran through
  AllocatorStats stats;                  // as of the last event replayed
};

// Runs `events` through a fresh allocator. Tensors still live at the end (weights, optimizer
// state) simply stay allocated.
ReplayResult replay(const std::vector<AllocatorEvent>& events, const AllocatorOptions& options);

}  // namespace memfit
