// An exact int64 that remembers overflow instead of wrapping.
//
// Sizes multiply quickly (layers × batch × sequence² × heads); an absurd but valid input must give
// an error, never a wrapped number. Formulas are written with ordinary operators on Exact, and the
// estimate reports an error if any step overflowed.
#pragma once

#include <cstdint>

namespace memfit {

class Exact {
 public:
  constexpr Exact() = default;
  constexpr Exact(std::int64_t value) : value_(value) {}  // NOLINT: implicit on purpose

  constexpr std::int64_t value() const { return value_; }
  constexpr bool overflow() const { return overflow_; }

  friend constexpr Exact operator+(Exact a, Exact b) {
    Exact r;
    r.overflow_ = a.overflow_ || b.overflow_ || __builtin_add_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  friend constexpr Exact operator-(Exact a, Exact b) {
    Exact r;
    r.overflow_ = a.overflow_ || b.overflow_ || __builtin_sub_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  friend constexpr Exact operator*(Exact a, Exact b) {
    Exact r;
    r.overflow_ = a.overflow_ || b.overflow_ || __builtin_mul_overflow(a.value_, b.value_, &r.value_);
    return r;
  }
  // Integer division, rounding toward zero; the divisor is a validated positive size.
  friend constexpr Exact operator/(Exact a, Exact b) {
    Exact r;
    r.overflow_ = a.overflow_ || b.overflow_ || b.value_ == 0;
    r.value_ = b.value_ == 0 ? 0 : a.value_ / b.value_;
    return r;
  }
  friend constexpr Exact max(Exact a, Exact b) {
    Exact r = a.value_ >= b.value_ ? a : b;
    r.overflow_ = a.overflow_ || b.overflow_;
    return r;
  }
  friend constexpr Exact min(Exact a, Exact b) {
    Exact r = a.value_ <= b.value_ ? a : b;
    r.overflow_ = a.overflow_ || b.overflow_;
    return r;
  }
  // a × b / c without the intermediate overflowing (128-bit product; GCC and Clang on every
  // target memfit builds for, wasm32 included). Used to take a share of a total.
  friend Exact mul_div(Exact a, Exact b, Exact c) {
    Exact r;
    if (c.value_ == 0 || a.overflow_ || b.overflow_ || c.overflow_) {
      r.overflow_ = true;
      return r;
    }
    __extension__ const __int128 q = static_cast<__int128>(a.value_) * b.value_ / c.value_;
    r.overflow_ = q > INT64_MAX || q < INT64_MIN;
    r.value_ = static_cast<std::int64_t>(q);
    return r;
  }
  Exact& operator+=(Exact b) { return *this = *this + b; }
  Exact& operator-=(Exact b) { return *this = *this - b; }
  Exact& operator*=(Exact b) { return *this = *this * b; }

  friend constexpr bool operator==(Exact a, Exact b) { return a.value_ == b.value_; }
  friend constexpr auto operator<=>(Exact a, Exact b) { return a.value_ <=> b.value_; }

 private:
  std::int64_t value_ = 0;
  bool overflow_ = false;
};

constexpr Exact ceil_div(Exact a, Exact b) { return (a + b - 1) / b; }

}  // namespace memfit
