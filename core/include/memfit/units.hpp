// Quantities that say what they hold: `Count` (parameters, elements, tokens, layers) and `Bytes`.
//
// Both are exact int64 values that remember overflow (see exact.hpp). The types let the
// compiler catch the slips that plain integers allow: a byte count passed where a count is
// expected, a count added to bytes, bytes multiplied by bytes. What is allowed is what the
// physics allows:
//   Count ± Count → Count        Bytes ± Bytes → Bytes
//   Count × Count → Count        (rows × cols elements, tokens × width, ...)
//   Count × Bytes → Bytes        (n elements × bytes per element, n layers × bytes per layer)
//   Q × int, Q / int → Q         (a scalar factor or a parallel degree)
//   mul_div(Q, Count part, Count whole) → Q   (a share of a total)
// A bytes-per-element constant is itself a `Bytes` (kFp32Bytes = Bytes{4}). A plain integer
// converts to a Count (a configured size), never to Bytes.
#pragma once

#include <cstdint>
#include <type_traits>

#include "memfit/exact.hpp"

namespace memfit {

struct CountUnit {};
struct BytesUnit {};

template <class Unit>
class Quantity {
 public:
  constexpr Quantity() = default;
  constexpr explicit Quantity(Exact value) : value_(value) {}
  // A plain integer (a configured size: hidden_size, num_hidden_layers) is a count; bytes must be
  // named as such: Bytes{4}.
  constexpr explicit(!std::is_same_v<Unit, CountUnit>) Quantity(std::int64_t value) : value_(value) {}

  constexpr Exact exact() const { return value_; }
  constexpr std::int64_t value() const { return value_.value(); }
  constexpr bool overflow() const { return value_.overflow(); }
  constexpr bool is_zero() const { return value_.value() == 0 && !value_.overflow(); }

  friend constexpr Quantity operator+(Quantity a, Quantity b) { return Quantity(a.value_ + b.value_); }
  friend constexpr Quantity operator-(Quantity a, Quantity b) { return Quantity(a.value_ - b.value_); }
  friend constexpr Quantity operator*(Quantity a, std::int64_t k) { return Quantity(a.value_ * Exact(k)); }
  friend constexpr Quantity operator*(std::int64_t k, Quantity a) { return Quantity(Exact(k) * a.value_); }
  // Integer division rounding toward zero, by a validated positive degree (tensor, pipeline, ...).
  friend constexpr Quantity operator/(Quantity a, std::int64_t k) { return Quantity(a.value_ / Exact(k)); }
  friend constexpr Quantity ceil_div(Quantity a, std::int64_t k) { return Quantity(memfit::ceil_div(a.value_, Exact(k))); }
  friend constexpr Quantity max(Quantity a, Quantity b) { return Quantity(max(a.value_, b.value_)); }
  friend constexpr Quantity min(Quantity a, Quantity b) { return Quantity(min(a.value_, b.value_)); }
  Quantity& operator+=(Quantity b) { return *this = *this + b; }
  Quantity& operator-=(Quantity b) { return *this = *this - b; }

  friend constexpr bool operator==(Quantity a, Quantity b) { return a.value_ == b.value_; }
  friend constexpr auto operator<=>(Quantity a, Quantity b) { return a.value_ <=> b.value_; }

 private:
  Exact value_;
};

using Count = Quantity<CountUnit>;
using Bytes = Quantity<BytesUnit>;

constexpr Count operator*(Count a, Count b) { return Count(a.exact() * b.exact()); }
constexpr Bytes operator*(Count n, Bytes each) { return Bytes(n.exact() * each.exact()); }
constexpr Bytes operator*(Bytes each, Count n) { return Bytes(each.exact() * n.exact()); }
// A count divided by a count (rows per stage, elements per expert); division rounds toward zero.
constexpr Count operator/(Count a, Count b) { return Count(a.exact() / b.exact()); }
constexpr Count ceil_div(Count a, Count b) { return Count(ceil_div(a.exact(), b.exact())); }

// q × part / whole without the intermediate overflowing: a share of a total.
template <class Unit>
Quantity<Unit> mul_div(Quantity<Unit> q, Count part, Count whole) {
  return Quantity<Unit>(mul_div(q.exact(), part.exact(), whole.exact()));
}

// Bytes per element of the dtypes the memory model uses.
inline constexpr Bytes kFp32Bytes{4};
inline constexpr Bytes kHalfBytes{2};   // fp16 / bf16
inline constexpr Bytes kByte{1};        // int8, fp8, torch.bool masks
inline constexpr Bytes kInt64Bytes{8};  // token ids, labels, indices

}  // namespace memfit
