// The caching-allocator model, example by example. Expected numbers are derived in the comments
// from the rules in core/src/allocator.cpp (PyTorch's DeviceCachingAllocator); where PyTorch's own
// tests or docs state a number, the comment says where.
#include "allocator.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace memfit {
namespace {

constexpr std::int64_t kMiB = 1LL << 20;

Bytes mib(std::int64_t n) { return Bytes{n * kMiB}; }
Bytes bytes(std::int64_t n) { return Bytes{n}; }

AllocatorOptions expandable() {
  AllocatorOptions o;
  o.segment_mode = SegmentMode::kExpandable;
  return o;
}

std::vector<Handle> allocate_n(CachingAllocator& a, int n, Bytes each) {
  std::vector<Handle> hs;
  for (int i = 0; i < n; ++i) hs.push_back(a.allocate(each));
  return hs;
}

void free_all(CachingAllocator& a, std::vector<Handle>& hs) {
  for (const Handle& h : hs) EXPECT_TRUE(a.free(h));
  hs.clear();
}

// ---- Rounding (round_size, get_allocation_size) ---------------------------------------------

TEST(AllocatorRounding, BlocksAreMultiplesOf512WithA512Minimum) {
  const AllocatorOptions o;
  EXPECT_EQ(allocator_block_bytes(bytes(1), o), bytes(512));      // below 512 → 512
  EXPECT_EQ(allocator_block_bytes(bytes(512), o), bytes(512));
  EXPECT_EQ(allocator_block_bytes(bytes(513), o), bytes(1024));
  EXPECT_EQ(allocator_block_bytes(bytes(1000), o), bytes(1024));  // ceil(1000 / 512) = 2 → 1024
}

TEST(AllocatorRounding, SegmentSizeDependsOnThePool) {
  const AllocatorOptions o;
  EXPECT_EQ(allocator_segment_bytes(mib(1), o), mib(2));                 // small pool: <= 1 MiB
  EXPECT_EQ(allocator_segment_bytes(mib(1) + bytes(512), o), mib(20));   // 1–10 MiB: kLargeBuffer
  EXPECT_EQ(allocator_segment_bytes(mib(10) - bytes(512), o), mib(20));
  EXPECT_EQ(allocator_segment_bytes(mib(10), o), mib(10));               // >= 10 MiB: ceil to 2 MiB
  EXPECT_EQ(allocator_segment_bytes(mib(11), o), mib(12));
}

TEST(AllocatorRounding, SmallRequestsShareOneTwoMiBSegment) {
  CachingAllocator a;
  a.allocate(bytes(1));        // 512
  a.allocate(bytes(1000));     // 1024
  a.allocate(bytes(100000));   // ceil(100000 / 512) = 196 → 100,352
  a.allocate(mib(1));          // 1 MiB is still small
  EXPECT_EQ(a.allocated_bytes(), bytes(512 + 1024 + 100352 + kMiB));
  EXPECT_EQ(a.requested_bytes(), bytes(1 + 1000 + 100000 + kMiB));
  EXPECT_EQ(a.reserved_bytes(), mib(2));  // 1,150,464 bytes fit the first 2 MiB segment
  EXPECT_EQ(a.segment_count(), Count{1});
}

TEST(AllocatorRounding, AThreeMiBRequestReservesATwentyMiBSegment) {
  CachingAllocator a;
  const Handle h = a.allocate(mib(3));
  EXPECT_EQ(a.allocated_bytes(), mib(3));  // 17 MiB stay cached behind it (17 MiB > 1 MiB: split)
  EXPECT_EQ(a.reserved_bytes(), mib(20));
  EXPECT_EQ(a.block_bytes(h), mib(3));
  EXPECT_EQ(a.largest_free_block_bytes(), mib(17));
}

TEST(AllocatorRounding, ALargeRequestReservesItsSizeRoundedUpToTwoMiB) {
  CachingAllocator a;
  a.allocate(bytes(50000001));
  // round_size: ceil(50,000,001 / 512) × 512 = 97,657 × 512 = 50,000,384.
  // get_allocation_size: ceil(50,000,384 / 2 MiB) × 2 MiB = 24 × 2,097,152 = 50,331,648.
  EXPECT_EQ(a.reserved_bytes(), bytes(50331648));
  // The 331,264 bytes left over are not more than 1 MiB, so the large pool does not split them off:
  // the block is the whole segment and memory_allocated counts all of it.
  EXPECT_EQ(a.allocated_bytes(), bytes(50331648));
  EXPECT_EQ(a.requested_bytes(), bytes(50000001));
}

// test_allocator_settings, as in torch_mlu's port of PyTorch's test/test_cuda.py: 21 Mi floats =
// 84 MiB; with roundup_power2_divisions:4 memory_allocated grows by power2_div(84 MiB, 4).
TEST(AllocatorRounding, PowerOfTwoDivisions) {
  AllocatorOptions four;
  four.roundup_power2_divisions.fill(4);
  // 84 MiB lies in [64, 128) MiB; 4 steps of 16 MiB: 64, 80, 96, 112 → 96 MiB.
  EXPECT_EQ(allocator_block_bytes(mib(84), four), mib(96));
  // The division only applies above 512 × divisions bytes: 1200 <= 2048 keeps 512-byte rounding
  // (1536), though roundup_power2_next_division's own comment gives 1200 → 1280.
  EXPECT_EQ(allocator_block_bytes(bytes(1200), four), bytes(1536));
  EXPECT_EQ(allocator_block_bytes(bytes(5000), four), bytes(5120));  // [4096, 8192): steps of 1024
  EXPECT_EQ(allocator_block_bytes(mib(64), four), mib(64));          // a power of two stays

  // "roundup_power2_divisions:[64:8,128:2,256:2,512:2,1024:1,>:1]": the first entry also covers
  // everything below it, intervals are indexed by log2 of the size in MiB.
  AllocatorOptions table;
  for (int i = 0; i <= 6; ++i) table.roundup_power2_divisions[i] = 8;  // up to [64, 128) MiB
  table.roundup_power2_divisions[7] = 2;                                // [128, 256)
  table.roundup_power2_divisions[8] = 2;                                // [256, 512)
  table.roundup_power2_divisions[9] = 2;                                // [512, 1024)
  for (int i = 10; i < kRoundupIntervalCount; ++i) table.roundup_power2_divisions[i] = 1;
  EXPECT_EQ(allocator_block_bytes(mib(84), table), mib(88));    // 8 steps of 8 MiB above 64 MiB
  EXPECT_EQ(allocator_block_bytes(mib(400), table), mib(512));  // 100 Mi floats: 256 + 128 < 400

  // test_roundup_power2_divisions_0: "[128:1,256:0,512:4]": 268 MiB in [256, 512) is not rounded,
  // 520 MiB in [512, 1024) rounds to 512 + 128 = 640 MiB.
  AllocatorOptions zero;
  for (int i = 0; i <= 7; ++i) zero.roundup_power2_divisions[i] = 1;
  zero.roundup_power2_divisions[8] = 0;
  zero.roundup_power2_divisions[9] = 4;
  EXPECT_EQ(allocator_block_bytes(mib(268), zero), mib(268));
  EXPECT_EQ(allocator_block_bytes(mib(520), zero), mib(640));
}

// ---- Reuse and best fit (get_free_block) ----------------------------------------------------

TEST(AllocatorReuse, FreeThenAllocateTheSameSizeMakesNoNewSegment) {
  CachingAllocator a;
  EXPECT_TRUE(a.free(a.allocate(mib(3))));
  a.allocate(mib(3));
  EXPECT_EQ(a.reserved_bytes(), mib(20));
  EXPECT_EQ(a.segment_count(), Count{1});
  EXPECT_EQ(a.stats().device_alloc_count, Count{1});  // one cudaMalloc in all
}

TEST(AllocatorReuse, BestFitTakesTheSmallerOfTwoFreeBlocks) {
  CachingAllocator a;
  // Two segments of exactly 12 and 16 MiB (requests >= 10 MiB get their own size), then freed.
  a.free(a.allocate(mib(12)));
  a.free(a.allocate(mib(16)));
  // 11 MiB fits both; best fit takes the 12 MiB block. Its 1 MiB rest is not > 1 MiB, so the
  // whole 12 MiB is allocated (taking the 16 MiB block would have split: 11 allocated, 5 free).
  const Handle eleven = a.allocate(mib(11));
  EXPECT_EQ(a.block_bytes(eleven), mib(12));
  // 14 MiB now fits only the 16 MiB block, which splits (2 MiB rest > 1 MiB).
  const Handle fourteen = a.allocate(mib(14));
  EXPECT_EQ(a.block_bytes(fourteen), mib(14));
  EXPECT_EQ(a.allocated_bytes(), mib(26));
  EXPECT_EQ(a.reserved_bytes(), mib(28));
  EXPECT_EQ(a.largest_free_block_bytes(), mib(2));
}

TEST(AllocatorReuse, EqualFreeBlocksAreTakenLowestAddressFirst) {
  CachingAllocator a;
  const Handle x = a.allocate(mib(12));
  const Handle y = a.allocate(mib(12));
  const std::int64_t x_address = a.block_address(x);
  ASSERT_LT(x_address, a.block_address(y));  // segments are placed one after another
  a.free(y);
  a.free(x);
  const Handle z = a.allocate(mib(12));
  EXPECT_EQ(a.block_address(z), x_address);  // BlockComparatorSize: (size, address)
}

TEST(AllocatorReuse, PoolsNeverServeEachOther) {
  // pytorch devlog "When does fragmentation occur in the CUDA caching allocator?" (the 1 MiB
  // loophole): 2 MiB then, once freed, 0.5 MiB reserves 22 MiB; 2 MiB then 2 MiB reserves 20 MiB.
  for (const SegmentMode mode : {SegmentMode::kCudaMalloc, SegmentMode::kExpandable}) {
    AllocatorOptions o;
    o.segment_mode = mode;
    CachingAllocator crossing(o);
    crossing.free(crossing.allocate(mib(2)));  // large pool: a 20 MiB segment (or page)
    crossing.allocate(mib(1) / 2);             // small pool: its own 2 MiB segment (or page)
    EXPECT_EQ(crossing.reserved_bytes(), mib(22));
    CachingAllocator staying(o);
    staying.free(staying.allocate(mib(2)));
    staying.allocate(mib(2));
    EXPECT_EQ(staying.reserved_bytes(), mib(20));
  }
}

// ---- Splitting and merging (should_split, try_merge_blocks) ---------------------------------

TEST(AllocatorSplit, ATwentyMiBSegmentHoldsSixThreeMiBBlocks) {
  CachingAllocator a;
  // Each 3 MiB request splits the segment's free rest: 17, 14, 11, 8, 5, then 2 MiB (> 1 MiB).
  allocate_n(a, 6, mib(3));
  EXPECT_EQ(a.reserved_bytes(), mib(20));
  EXPECT_EQ(a.largest_free_block_bytes(), mib(2));
  a.allocate(mib(3));  // 2 MiB left: the seventh needs a second segment
  EXPECT_EQ(a.reserved_bytes(), mib(40));
  EXPECT_EQ(a.segment_count(), Count{2});
  EXPECT_EQ(a.allocated_bytes(), mib(21));
}

TEST(AllocatorSplit, ALargePoolRestOfAtMostOneMiBStaysWithTheBlock) {
  CachingAllocator a;
  allocate_n(a, 5, mib(3));  // 15 MiB of one 20 MiB segment; 5 MiB free
  // 4 MiB leaves exactly 1 MiB: not more than kSmallSize, so no split; the block is 5 MiB.
  const Handle h = a.allocate(mib(4));
  EXPECT_EQ(a.block_bytes(h), mib(5));
  EXPECT_EQ(a.allocated_bytes(), mib(20));
  EXPECT_EQ(a.requested_bytes(), mib(19));
  EXPECT_EQ(a.largest_free_block_bytes(), bytes(0));
}

TEST(AllocatorSplit, SmallPoolSplitsAnyRestOf512Bytes) {
  CachingAllocator a;
  a.allocate(mib(1));                  // one 2 MiB segment: 1 MiB allocated, 1 MiB free
  a.allocate(mib(1) - bytes(512));     // leaves 512 bytes, still split off in the small pool
  EXPECT_EQ(a.largest_free_block_bytes(), bytes(512));
  const Handle last = a.allocate(bytes(100));  // rounds to 512: the rest, exactly
  EXPECT_EQ(a.block_bytes(last), bytes(512));
  EXPECT_EQ(a.allocated_bytes(), mib(2));
  EXPECT_EQ(a.reserved_bytes(), mib(2));
}

TEST(AllocatorSplit, FreeingNeighboursMergesThemSoALargerRequestFits) {
  CachingAllocator a;
  std::vector<Handle> hs = allocate_n(a, 6, mib(3));  // [0,3) [3,6) ... [15,18), free [18,20)
  a.free(hs[1]);
  a.free(hs[2]);  // [3,6) and [6,9) merge into one 6 MiB free block
  EXPECT_EQ(a.largest_free_block_bytes(), mib(6));
  const Handle six = a.allocate(mib(6));
  EXPECT_EQ(a.block_address(six), a.block_address(hs[0]) + 3 * kMiB);
  EXPECT_EQ(a.reserved_bytes(), mib(20));  // no new segment
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(AllocatorSplit, FreeBlocksApartDoNotMerge) {
  CachingAllocator a;
  std::vector<Handle> hs = allocate_n(a, 6, mib(3));
  a.free(hs[1]);
  a.free(hs[3]);  // two 3 MiB holes with [6,9) still allocated between them
  EXPECT_EQ(a.largest_free_block_bytes(), mib(3));
  a.allocate(mib(6));  // fits no hole: a new 20 MiB segment (6 MiB < 10 MiB)
  EXPECT_EQ(a.reserved_bytes(), mib(40));
}

TEST(AllocatorSplit, FreeingEverythingMergesTheSegmentBack) {
  CachingAllocator a;
  std::vector<Handle> hs = allocate_n(a, 6, mib(3));
  free_all(a, hs);
  EXPECT_EQ(a.largest_free_block_bytes(), mib(20));
  EXPECT_EQ(a.allocated_bytes(), bytes(0));
  EXPECT_EQ(a.reserved_bytes(), mib(20));  // no empty_cache: the segment stays reserved
  EXPECT_EQ(a.check_invariants(), "");
}

// ---- max_split_size_mb ----------------------------------------------------------------------

TEST(AllocatorMaxSplit, OversizedBlocksServeOnlyOversizedRequestsAndAreNeverSplit) {
  AllocatorOptions o;
  o.max_split_size_bytes = mib(40);
  {
    CachingAllocator a(o);
    a.free(a.allocate(mib(50)));
    a.allocate(mib(30));  // 30 < 40: the cached 50 MiB block (>= 40) is off limits
    EXPECT_EQ(a.reserved_bytes(), mib(80));
  }
  {
    CachingAllocator a(o);
    a.free(a.allocate(mib(50)));
    const Handle h = a.allocate(mib(45));  // 45 >= 40 and 50 < 45 + 20: reused whole, not split
    EXPECT_EQ(a.block_bytes(h), mib(50));
    EXPECT_EQ(a.reserved_bytes(), mib(50));
  }
  {
    CachingAllocator a(o);
    a.free(a.allocate(mib(80)));
    a.allocate(mib(45));  // 80 >= 45 + 20 (max_non_split_rounding): a new 46 MiB segment
    EXPECT_EQ(a.reserved_bytes(), mib(126));
  }
  {
    CachingAllocator a;  // unlimited (the default): the 50 MiB block splits into 30 + 20
    a.free(a.allocate(mib(50)));
    a.allocate(mib(30));
    EXPECT_EQ(a.reserved_bytes(), mib(50));
    EXPECT_EQ(a.largest_free_block_bytes(), mib(20));
  }
}

// ---- Fragmentation PyTorch really shows -----------------------------------------------------
// The examples of the pytorch devlog "When does fragmentation occur in the CUDA caching
// allocator?" (pytorch/devlogs, content/eager/2026-06-01-cuda-caching-allocator.md), run there on
// a GPU with torch.cuda.memory_snapshot.

TEST(AllocatorFragmentation, SmallThenLargeReservesTwiceLargeThenSmall) {
  {
    CachingAllocator a;
    std::vector<Handle> small = allocate_n(a, 8, mib(16));  // eight 16 MiB segments: 128 MiB
    free_all(a, small);
    std::vector<Handle> large = allocate_n(a, 4, mib(32));  // no 16 MiB block holds 32 MiB
    EXPECT_EQ(a.reserved_bytes(), mib(256));
    EXPECT_EQ(a.peak_allocated_bytes(), mib(128));
  }
  {
    CachingAllocator a;
    std::vector<Handle> large = allocate_n(a, 4, mib(32));  // four 32 MiB segments
    free_all(a, large);
    std::vector<Handle> small = allocate_n(a, 8, mib(16));  // each splits into 16 + 16
    EXPECT_EQ(a.reserved_bytes(), mib(128));
  }
}

TEST(AllocatorFragmentation, ExpandableSegmentsMapTwentyMiBPagesOnDemand) {
  CachingAllocator a(expandable());
  // 16 MiB at a time from 20 MiB pages: mapped 20, 40, 60, 80, 80 (the 16 MiB rest fits), 100, 120,
  // 140 MiB; the devlog's "7 large pages: 140 MiB of physical memory for 128 MiB".
  const std::int64_t mapped_after[] = {20, 40, 60, 80, 80, 100, 120, 140};
  std::vector<Handle> hs;
  for (const std::int64_t expected : mapped_after) {
    hs.push_back(a.allocate(mib(16)));
    EXPECT_EQ(a.reserved_bytes(), mib(expected));
  }
  EXPECT_EQ(a.stats().device_alloc_count, Count{7});
  EXPECT_EQ(a.segment_count(), Count{1});
  // Freed, the blocks merge into one 140 MiB block, from which 4 × 32 MiB need no new page.
  free_all(a, hs);
  EXPECT_EQ(a.largest_free_block_bytes(), mib(140));
  allocate_n(a, 4, mib(32));
  EXPECT_EQ(a.reserved_bytes(), mib(140));
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(AllocatorFragmentation, ExpandableSegmentsStillFragmentAroundLiveBlocks) {
  CachingAllocator a(expandable());
  std::vector<Handle> ts = allocate_n(a, 4, mib(16));  // [0,64) allocated, [64,80) free: 80 MiB
  EXPECT_EQ(a.reserved_bytes(), mib(80));
  a.free(ts[0]);
  a.free(ts[2]);  // 16 MiB holes at 0 and 32, pinned apart by the live blocks at 16 and 48
  // 32 MiB fits no hole; the free 16 MiB at the end grows by one 20 MiB page into 36 MiB.
  const Handle big = a.allocate(mib(32));
  EXPECT_EQ(a.reserved_bytes(), mib(100));
  a.free(big);
  a.free(ts[1]);
  a.free(ts[3]);  // all free: one 100 MiB block
  EXPECT_EQ(a.largest_free_block_bytes(), mib(100));
  a.allocate(mib(32));
  EXPECT_EQ(a.reserved_bytes(), mib(100));  // fits without growing
}

TEST(AllocatorFragmentation, GrowingRequestsStrandFreedSegmentsUnlessSegmentsExpand) {
  // A temporary that grows a little each time (the batch grows, a sequence lengthens): each
  // 12 + 2k MiB request (k = 0..7) is freed before the next, which never fits the freed block.
  std::vector<AllocatorEvent> events;
  for (std::int64_t k = 0; k < 8; ++k) {
    events.push_back(alloc_event(k, mib(12 + 2 * k)));
    events.push_back(free_event(k));
  }
  const ReplayResult cuda_malloc = replay(events, AllocatorOptions{});
  // Every request gets its own segment: 12 + 14 + ... + 26 = 8 × 12 + 2 × 28 = 152 MiB reserved
  // for at most 26 MiB allocated.
  EXPECT_EQ(cuda_malloc.stats.reserved_bytes, mib(152));
  EXPECT_EQ(cuda_malloc.stats.peak_allocated_bytes, mib(26));
  // Expandable: one 20 MiB page serves 12..20 MiB (each freed block merges back with the rest);
  // 22 MiB maps a second page; 40 MiB serves the rest.
  const ReplayResult grown = replay(events, expandable());
  EXPECT_EQ(grown.stats.reserved_bytes, mib(40));
  EXPECT_EQ(grown.stats.peak_allocated_bytes, mib(26));
}

// ---- A bounded device: freeing the cache, retrying, running out ------------------------------

TEST(AllocatorCapacity, AFullDeviceFreesCachedSegmentsAndRetries) {
  AllocatorOptions o;
  o.device_capacity_bytes = mib(100);
  CachingAllocator a(o);
  a.free(a.allocate(mib(60)));  // a cached 60 MiB segment
  // 70 MiB fits no cached block, and 60 + 70 > 100: release_cached_blocks frees the 60 MiB
  // segment (cudaFree), then the retry's cudaMalloc succeeds.
  const Handle h = a.allocate(mib(70));
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(a.reserved_bytes(), mib(70));
  EXPECT_EQ(a.peak_reserved_bytes(), mib(70));
  const AllocatorStats s = a.stats();
  EXPECT_EQ(s.alloc_retry_count, Count{1});
  EXPECT_EQ(s.device_free_count, Count{1});
  EXPECT_EQ(s.oom_count, Count{0});
}

TEST(AllocatorCapacity, OutOfMemoryWhenLiveTensorsLeaveNoRoom) {
  AllocatorOptions o;
  o.device_capacity_bytes = mib(100);
  CachingAllocator a(o);
  a.allocate(mib(60));
  const Handle h = a.allocate(mib(50));  // 60 + 50 > 100 and nothing cached to give back
  EXPECT_FALSE(h.ok());
  EXPECT_EQ(h.error, AllocError::kOutOfMemory);
  EXPECT_EQ(a.stats().oom_count, Count{1});
  EXPECT_EQ(a.reserved_bytes(), mib(60));
}

// A block freed while another stream still uses it (record_stream): PyTorch's free() takes it out
// of allocated_bytes at once but caches it only when its events complete (insert_events,
// process_events); when cudaMalloc fails, release_cached_blocks first waits for every event.
TEST(AllocatorStreams, ARecordedBlockLeavesAllocatedButIsNotReusedUntilTheEventsPass) {
  AllocatorOptions o;
  o.device_capacity_bytes = mib(100);
  CachingAllocator a(o);
  const Handle gathered = a.allocate(mib(40));
  EXPECT_TRUE(a.free_recorded(gathered));
  EXPECT_EQ(a.allocated_bytes(), mib(0));
  EXPECT_EQ(a.pending_bytes(), mib(40));
  EXPECT_FALSE(a.free(gathered));  // no longer a live allocation
  // The same size again: the pending block cannot serve it, so a second segment is cut.
  const Handle next = a.allocate(mib(40));
  EXPECT_EQ(a.reserved_bytes(), mib(80));
  EXPECT_EQ(a.check_invariants(), "");
  EXPECT_TRUE(a.free_recorded(next));
  // 40 more: cudaMalloc would pass 100 MiB. release_cached_blocks synchronizes (both pending
  // blocks become cached whole segments), frees them, and the retry succeeds.
  EXPECT_TRUE(a.allocate(mib(40)).ok());
  EXPECT_EQ(a.pending_bytes(), mib(0));
  EXPECT_EQ(a.reserved_bytes(), mib(40));
  EXPECT_EQ(a.peak_reserved_bytes(), mib(80));
  EXPECT_EQ(a.stats().alloc_retry_count, Count{1});
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(AllocatorStreams, SynchronizingCachesWhatWaitedAndMergesIt) {
  CachingAllocator a;
  const Handle first = a.allocate(mib(3));  // a 20 MiB segment split 3 + 17
  const Handle second = a.allocate(mib(5));  // the 17 split 5 + 12
  EXPECT_TRUE(a.free_recorded(first));
  EXPECT_TRUE(a.free(second));
  // The waiting block neither merges with its free neighbour (5 + 12 do) nor serves a request.
  EXPECT_EQ(a.largest_free_block_bytes(), mib(17));
  EXPECT_EQ(a.check_invariants(), "");
  a.synchronize_and_free_events();
  EXPECT_EQ(a.largest_free_block_bytes(), mib(20));
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(AllocatorCapacity, FragmentationRunsOutOfMemoryThatExpandableSegmentsAvoid) {
  // Six 8 MiB tensors, then every other one freed, then a 12 MiB request on a 60 MiB device.
  std::vector<AllocatorEvent> events;
  for (int i = 0; i < 6; ++i) events.push_back(alloc_event(i, mib(8)));
  for (int i = 0; i < 6; i += 2) events.push_back(free_event(i));
  events.push_back(alloc_event(6, mib(12)));
  AllocatorOptions o;
  o.device_capacity_bytes = mib(60);
  // cudaMalloc segments: 8 MiB < 10 MiB takes a 20 MiB segment holding 8 + 8 + a 4 MiB rest;
  // three segments fill the 60 MiB. Freed, each holds an 8 MiB and a 4 MiB hole: 36 MiB cached,
  // none of it 12 MiB in one piece, no segment wholly free to give back: out of memory — "reserved
  // by PyTorch but unallocated" in PyTorch's message.
  const ReplayResult split = replay(events, o);
  EXPECT_EQ(split.status, ReplayStatus::kOutOfMemory);
  EXPECT_EQ(split.failed_event_index, 9);
  EXPECT_EQ(split.stats.reserved_bytes, mib(60));
  EXPECT_EQ(split.stats.allocated_bytes, mib(24));
  EXPECT_EQ(split.stats.largest_free_block_bytes, mib(8));
  EXPECT_EQ(split.stats.alloc_retry_count, Count{1});
  // Expandable: the six tensors tile [0, 48) MiB of three 20 MiB pages, leaving [48, 60) free;
  // the 12 MiB request takes it exactly.
  o.segment_mode = SegmentMode::kExpandable;
  const ReplayResult tiled = replay(events, o);
  EXPECT_EQ(tiled.status, ReplayStatus::kOk);
  EXPECT_EQ(tiled.stats.reserved_bytes, mib(60));
  EXPECT_EQ(tiled.stats.allocated_bytes, mib(36));
}

TEST(AllocatorCapacity, ExpandableSegmentsUnmapFreePagesToMakeRoom) {
  AllocatorOptions o = expandable();
  o.device_capacity_bytes = mib(60);
  CachingAllocator a(o);
  // Small pool: 2 MiB pages. A 1 MiB tensor maps one page; freed, the page stays mapped.
  a.free(a.allocate(mib(1)));
  // Large pool: 50 MiB maps three 20 MiB pages: 60 + 2 > 60, so the free small page is unmapped
  // (release_blocks → unmap_block) and the retry maps the three pages.
  const Handle h = a.allocate(mib(50));
  EXPECT_TRUE(h.ok());
  EXPECT_EQ(a.reserved_bytes(), mib(60));
  EXPECT_EQ(a.stats().device_free_count, Count{1});
  EXPECT_EQ(a.check_invariants(), "");
}

// ---- Handles and replay ---------------------------------------------------------------------

TEST(AllocatorHandles, DoubleAndStaleFreesAreRefused) {
  CachingAllocator a;
  const Handle h = a.allocate(mib(3));
  EXPECT_TRUE(a.free(h));
  EXPECT_FALSE(a.free(h));
  const Handle again = a.allocate(mib(3));  // may reuse the same block slot
  EXPECT_FALSE(a.free(h));                  // the old handle does not free the new tensor
  EXPECT_TRUE(a.free(again));
  EXPECT_FALSE(a.free(Handle{12345, 0, AllocError::kNone}));
  EXPECT_EQ(a.check_invariants(), "");
}

TEST(AllocatorHandles, ZeroBytesTakeNoBlockAndBadSizesAreRefused) {
  CachingAllocator a;
  const Handle zero = a.allocate(bytes(0));
  EXPECT_TRUE(zero.ok());
  EXPECT_EQ(a.reserved_bytes(), bytes(0));
  EXPECT_TRUE(a.free(zero));
  EXPECT_EQ(a.allocate(bytes(-1)).error, AllocError::kInvalidSize);
  EXPECT_EQ(a.allocate(Bytes{Exact(INT64_MAX) * 2}).error, AllocError::kInvalidSize);  // overflowed
  EXPECT_EQ(a.allocate(Bytes{std::int64_t{1} << 61}).error, AllocError::kOutOfMemory);  // "more than 1EB"
}

TEST(AllocatorReplay, MatchesTheAllocatorStepByStep) {
  const std::vector<AllocatorEvent> events = {
      alloc_event(1, mib(3)), alloc_event(2, mib(3)), free_event(1), alloc_event(3, mib(1) / 4),
      free_event(2), alloc_event(1, mib(5)),  // ids may be reused once freed
  };
  const ReplayResult r = replay(events, AllocatorOptions{});
  ASSERT_EQ(r.status, ReplayStatus::kOk);
  EXPECT_EQ(r.failed_event_index, -1);
  // Two 3 MiB blocks in one 20 MiB segment; 256 KiB in a 2 MiB small segment; freeing id 2
  // merges [0,20) back; 5 MiB reuses it.
  EXPECT_EQ(r.stats.reserved_bytes, mib(22));
  EXPECT_EQ(r.stats.allocated_bytes, mib(5) + bytes(262144));
  EXPECT_EQ(r.stats.peak_allocated_bytes, mib(6));  // both 3 MiB blocks live
  EXPECT_EQ(r.stats.segment_count, Count{2});
  EXPECT_EQ(r.stats.event_count, Count{6});
}

TEST(AllocatorReplay, ReportsTheEventItCouldNotReplay) {
  EXPECT_EQ(replay({free_event(7)}, {}).status, ReplayStatus::kUnknownId);
  const ReplayResult duplicate = replay({alloc_event(1, mib(1)), alloc_event(1, mib(1))}, {});
  EXPECT_EQ(duplicate.status, ReplayStatus::kDuplicateId);
  EXPECT_EQ(duplicate.failed_event_index, 1);
  EXPECT_EQ(duplicate.stats.allocated_bytes, mib(1));  // as of the last event replayed
  EXPECT_EQ(replay({alloc_event(1, bytes(-5))}, {}).status, ReplayStatus::kInvalidSize);
  AllocatorOptions bad;
  bad.max_split_size_bytes = mib(2);  // PyTorch: "max_split_size_mb too small, must be >= 20"
  EXPECT_NE(allocator_options_error(bad), "");
  EXPECT_EQ(replay({alloc_event(1, mib(1))}, bad).status, ReplayStatus::kInvalidOptions);
  bad = {};
  bad.roundup_power2_divisions[3] = 3;
  EXPECT_NE(allocator_options_error(bad), "");
  EXPECT_EQ(allocator_options_error(AllocatorOptions{}), "");
}

TEST(AllocatorReplay, TimelineKeepsEachWindowsHighestPoint) {
  const std::vector<AllocatorEvent> events = {
      alloc_event(1, mib(30)), alloc_event(2, mib(30)), free_event(2),  // peak 60 MiB inside
      free_event(1), alloc_event(3, mib(1)),
  };
  AllocatorOptions o;
  const ReplayResult every = replay(events, o);
  ASSERT_EQ(every.stats.timeline.size(), 5u);
  EXPECT_EQ(every.stats.timeline[1].allocated_bytes, mib(60));
  EXPECT_EQ(every.stats.timeline[2].allocated_bytes, mib(30));
  EXPECT_EQ(every.stats.timeline[4].reserved_bytes, mib(62));  // 30 + 30 + a 2 MiB small segment
  o.timeline_stride = 3;
  const ReplayResult sampled = replay(events, o);
  ASSERT_EQ(sampled.stats.timeline.size(), 2u);  // events 0–2 and 3–4
  EXPECT_EQ(sampled.stats.timeline[0].event_index, 0);
  EXPECT_EQ(sampled.stats.timeline[0].allocated_bytes, mib(60));  // the peak survives sampling
  EXPECT_EQ(sampled.stats.timeline[1].event_index, 3);
  EXPECT_EQ(sampled.stats.timeline[1].allocated_bytes, mib(1));
  o.timeline_stride = 0;
  EXPECT_TRUE(replay(events, o).stats.timeline.empty());
}

// ---- Properties over random event sequences -------------------------------------------------

// A request size: log-uniform from 1 byte to 256 MiB, so that both pools, all three segment
// classes and the split thresholds are hit often.
std::int64_t random_request(std::mt19937_64& rng) {
  const int log2 = static_cast<int>(rng() % 29);  // 2^0 .. 2^28
  const std::int64_t low = std::int64_t{1} << log2;
  return low + static_cast<std::int64_t>(rng() % static_cast<std::uint64_t>(low));
}

struct Live {
  Handle handle;
  std::int64_t requested;
};

// Runs one seeded random sequence, checking after every event what must always hold.
void check_random_sequence(std::uint64_t seed, const AllocatorOptions& o, int events) {
  std::mt19937_64 rng(seed);
  CachingAllocator a(o);
  std::vector<Live> live;
  std::int64_t last_reserved = 0, last_segments = 0;
  const bool bounded = o.device_capacity_bytes != kUnlimitedBytes;
  for (int e = 0; e < events; ++e) {
    if (live.empty() || rng() % 100 < 55) {
      const std::int64_t n = random_request(rng);
      const Handle h = a.allocate(Bytes{n});
      if (h.ok()) live.push_back({h, n});
      else ASSERT_TRUE(bounded) << "out of memory on an unbounded device";
    } else {
      const std::size_t i = rng() % live.size();
      ASSERT_TRUE(a.free(live[i].handle));
      live[i] = live.back();
      live.pop_back();
    }
    std::int64_t blocks = 0, rounded = 0, requested = 0;
    for (const Live& l : live) {
      const std::int64_t block = a.block_bytes(l.handle).value();
      const std::int64_t round = allocator_block_bytes(Bytes{l.requested}, o).value();
      // A block is the rounded request, or more when the rest was too small to split off: at most
      // 1 MiB in the large pool, less than max_non_split_rounding for an oversized block.
      ASSERT_GE(block, round);
      if (o.segment_mode == SegmentMode::kExpandable || round <= kMiB) ASSERT_EQ(block, round);
      else if (round < o.max_split_size_bytes.value()) ASSERT_LE(block - round, kMiB);
      else ASSERT_LT(block - round, o.max_non_split_rounding_bytes.value());
      blocks += block;
      rounded += round;
      requested += l.requested;
    }
    ASSERT_EQ(a.allocated_bytes().value(), blocks);
    ASSERT_GE(a.allocated_bytes().value(), rounded);
    ASSERT_EQ(a.requested_bytes().value(), requested);
    ASSERT_GE(a.reserved_bytes(), a.allocated_bytes());
    ASSERT_GE(a.peak_reserved_bytes(), a.peak_allocated_bytes());
    ASSERT_GE(a.peak_allocated_bytes(), a.allocated_bytes());
    if (bounded) {
      ASSERT_LE(a.reserved_bytes(), o.device_capacity_bytes);
    } else {
      ASSERT_GE(a.reserved_bytes().value(), last_reserved) << "reserved fell without empty_cache";
      ASSERT_GE(a.segment_count().value(), last_segments);
      ASSERT_EQ(a.peak_reserved_bytes(), a.reserved_bytes());
    }
    last_reserved = a.reserved_bytes().value();
    last_segments = a.segment_count().value();
    if (e % 16 == 0 || e + 1 == events) {
      ASSERT_EQ(a.check_invariants(), "") << "seed " << seed << " event " << e;
    }
  }
  const AllocatorStats s = a.stats();
  std::int64_t timeline_peak_allocated = 0, timeline_peak_reserved = 0;
  for (const TimelinePoint& p : s.timeline) {
    timeline_peak_allocated = std::max(timeline_peak_allocated, p.allocated_bytes.value());
    timeline_peak_reserved = std::max(timeline_peak_reserved, p.reserved_bytes.value());
  }
  ASSERT_EQ(timeline_peak_allocated, s.peak_allocated_bytes.value());
  ASSERT_EQ(timeline_peak_reserved, s.peak_reserved_bytes.value());
}

AllocatorOptions variant(int v) {
  AllocatorOptions o;
  o.timeline_stride = 1 + v % 5;
  switch (v % 6) {
    case 0: break;
    case 1: o.segment_mode = SegmentMode::kExpandable; break;
    case 2: o.max_split_size_bytes = mib(64); break;
    case 3: o.roundup_power2_divisions.fill(4); break;
    case 4: o.device_capacity_bytes = mib(1024); break;
    case 5:
      o.segment_mode = SegmentMode::kExpandable;
      o.device_capacity_bytes = mib(1024);
      break;
  }
  return o;
}

TEST(AllocatorProperties, ThousandsOfRandomSequencesKeepTheInvariants) {
  for (std::uint64_t seed = 1; seed <= 3000; ++seed) {
    check_random_sequence(seed, variant(static_cast<int>(seed)), 200);
    if (testing::Test::HasFatalFailure()) return;
  }
}

TEST(AllocatorProperties, LongSequencesKeepTheInvariants) {
  for (std::uint64_t seed = 1; seed <= 12; ++seed) {
    check_random_sequence(seed * 7919, variant(static_cast<int>(seed)), 5000);
    if (testing::Test::HasFatalFailure()) return;
  }
}

// A second, deliberately naive model of the same rules for cudaMalloc segments on an unbounded
// device: every block in one address-ordered vector, best fit by a linear scan, merging by looking
// at vector neighbours. It shares no data structure with CachingAllocator, so agreeing with it
// block address by block address checks the ordered-set bookkeeping.
class NaiveAllocator {
 public:
  explicit NaiveAllocator(const AllocatorOptions& o) : o_(o) {}

  // The address of the block serving `n` bytes.
  std::int64_t allocate(std::int64_t n) {
    const std::int64_t size = allocator_block_bytes(Bytes{n}, o_).value();
    const bool small = size <= kMiB;
    const std::int64_t max_split = o_.max_split_size_bytes.value();
    std::size_t best = blocks_.size();
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
      const Block& b = blocks_[i];
      if (b.allocated || b.small != small || b.size < size) continue;
      if (best == blocks_.size() || b.size < blocks_[best].size) best = i;  // address order breaks ties
    }
    if (best != blocks_.size()) {
      const std::int64_t found = blocks_[best].size;
      if ((size < max_split && found >= max_split) ||
          (size >= max_split && found >= size + o_.max_non_split_rounding_bytes.value())) {
        best = blocks_.size();
      }
    }
    if (best == blocks_.size()) {
      const std::int64_t segment = allocator_segment_bytes(Bytes{size}, o_).value();
      blocks_.push_back({next_address_, segment, segment_count_++, small, false});
      next_address_ += segment;
      reserved_ += segment;
      best = blocks_.size() - 1;
    }
    Block& b = blocks_[best];
    const std::int64_t rest = b.size - size;
    if (small ? rest >= 512 : (size < max_split && rest > kMiB)) {
      const Block tail{b.address + size, rest, b.segment, small, false};
      b.size = size;
      blocks_.insert(blocks_.begin() + static_cast<std::ptrdiff_t>(best) + 1, tail);
    }
    blocks_[best].allocated = true;
    allocated_ += blocks_[best].size;
    return blocks_[best].address;
  }

  void free(std::int64_t address) {
    std::size_t i = 0;
    while (blocks_[i].address != address) ++i;
    blocks_[i].allocated = false;
    allocated_ -= blocks_[i].size;
    const auto mergeable = [this](std::size_t a, std::size_t b) {
      return !blocks_[a].allocated && !blocks_[b].allocated && blocks_[a].segment == blocks_[b].segment;
    };
    if (i + 1 < blocks_.size() && mergeable(i, i + 1)) {
      blocks_[i].size += blocks_[i + 1].size;
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    }
    if (i > 0 && mergeable(i - 1, i)) {
      blocks_[i - 1].size += blocks_[i].size;
      blocks_.erase(blocks_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::int64_t allocated() const { return allocated_; }
  std::int64_t reserved() const { return reserved_; }

 private:
  struct Block {
    std::int64_t address, size, segment;
    bool small, allocated;
  };
  AllocatorOptions o_;
  std::vector<Block> blocks_;
  std::int64_t next_address_ = 0, reserved_ = 0, allocated_ = 0, segment_count_ = 0;
};

TEST(AllocatorProperties, AgreesWithANaiveModelBlockByBlock) {
  for (std::uint64_t seed = 1; seed <= 600; ++seed) {
    AllocatorOptions o;
    if (seed % 3 == 1) o.max_split_size_bytes = mib(32);
    if (seed % 3 == 2) o.roundup_power2_divisions.fill(2);
    std::mt19937_64 rng(seed);
    CachingAllocator a(o);
    NaiveAllocator naive(o);
    std::vector<std::pair<Handle, std::int64_t>> live;  // handle, naive address
    for (int e = 0; e < 300; ++e) {
      if (live.empty() || rng() % 100 < 55) {
        const std::int64_t n = random_request(rng);
        const Handle h = a.allocate(Bytes{n});
        const std::int64_t address = naive.allocate(n);
        ASSERT_EQ(a.block_address(h), address) << "seed " << seed << " event " << e;
        live.emplace_back(h, address);
      } else {
        const std::size_t i = rng() % live.size();
        a.free(live[i].first);
        naive.free(live[i].second);
        live[i] = live.back();
        live.pop_back();
      }
      ASSERT_EQ(a.allocated_bytes().value(), naive.allocated()) << "seed " << seed << " event " << e;
      ASSERT_EQ(a.reserved_bytes().value(), naive.reserved()) << "seed " << seed << " event " << e;
    }
  }
}

}  // namespace
}  // namespace memfit
