// Count and Bytes: what the compiler lets through, and what it refuses.
#include <gtest/gtest.h>

#include <type_traits>

#include "memfit/units.hpp"

namespace memfit {
namespace {

template <class A, class B>
concept Addable = requires(A a, B b) { a + b; };
template <class A, class B>
concept Multipliable = requires(A a, B b) { a * b; };

// The slips the types exist to catch do not compile.
static_assert(!Addable<Bytes, Count>, "bytes + count");
static_assert(!Addable<Count, Bytes>, "count + bytes");
static_assert(!Multipliable<Bytes, Bytes>, "bytes × bytes");
static_assert(!std::is_convertible_v<Bytes, Count>, "bytes passed as a count");
static_assert(!std::is_convertible_v<Count, Bytes>, "a count passed as bytes");
static_assert(!std::is_convertible_v<std::int64_t, Bytes>, "a plain integer is not bytes");
// What the physics allows does.
static_assert(std::is_convertible_v<std::int64_t, Count>, "a configured size is a count");
static_assert(std::is_same_v<decltype(Count{} * Count{}), Count>);
static_assert(std::is_same_v<decltype(Count{} * Bytes{}), Bytes>);
static_assert(std::is_same_v<decltype(Bytes{} * Count{}), Bytes>);
static_assert(std::is_same_v<decltype(Bytes{} * std::int64_t{2}), Bytes>);
static_assert(std::is_same_v<decltype(Bytes{} / std::int64_t{2}), Bytes>);

TEST(Units, ElementsTimesDtypeAreBytes) {
  // A 4096 × 4096 fp32 weight: 16,777,216 elements, 67,108,864 bytes.
  const Count elements = Count(4096) * 4096;
  EXPECT_EQ(elements.value(), 16'777'216);
  EXPECT_EQ((elements * kFp32Bytes).value(), 67'108'864);
  EXPECT_EQ(ceil_div(Count(10), 4).value(), 3);
}

TEST(Units, OverflowIsRememberedNotWrapped) {
  const Count huge = Count(INT64_MAX / 2) * 3;
  EXPECT_TRUE(huge.overflow());
  EXPECT_TRUE((huge * kHalfBytes).overflow());
  EXPECT_TRUE(max(Bytes{1}, huge * kByte).overflow());
  EXPECT_TRUE(min(Bytes{1}, huge * kByte).overflow());  // the smaller value, still flagged
}

TEST(Units, ShareOfATotalWithoutIntermediateOverflow) {
  // 3/4 of 8e18 bytes: the product 2.4e19 exceeds int64, the share does not.
  const Bytes total{8'000'000'000'000'000'000};
  const Bytes share = mul_div(total, Count(3), Count(4));
  EXPECT_FALSE(share.overflow());
  EXPECT_EQ(share.value(), 6'000'000'000'000'000'000);
}

}  // namespace
}  // namespace memfit
