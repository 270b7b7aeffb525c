// A small, strict JSON reader and writer.
//
// memfit reads JSON in three places (the configuration, a pasted Hugging Face config.json, the
// command line's --config) and writes it in two (the CLI's --json and the wasm boundary). A
// general-purpose library would cost more page weight than the rest of the core together and
// reports errors by throwing; this one is small, never throws, keeps object keys in order,
// keeps integers exact up to int64, and reports errors as data with a line and column.
//
// Hostile input is bounded before it costs anything in proportion (see parse_json): a value is
// 16 bytes, an object finds a key in O(1) expected comparisons, and documents over 16 MiB, over
// 64 levels deep, over 200,000 values or holding invalid UTF-8 are refused with a message.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memfit {

class Json {
 public:
  enum class Kind : std::uint8_t { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, Json>;

  Json() noexcept : integer_(0) {}
  Json(const Json& other);
  Json(Json&& other) noexcept;
  Json& operator=(const Json& other);
  Json& operator=(Json&& other) noexcept;
  ~Json();

  static Json null() { return Json(); }
  static Json boolean(bool value);
  static Json number(double value);
  static Json integer(std::int64_t value);
  static Json string(std::string value);
  static Json array();
  static Json object();

  Kind kind() const { return kind_; }
  bool is_null() const { return kind_ == Kind::kNull; }
  bool is_bool() const { return kind_ == Kind::kBool; }
  bool is_number() const { return kind_ == Kind::kNumber; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_array() const { return kind_ == Kind::kArray; }
  bool is_object() const { return kind_ == Kind::kObject; }

  bool as_bool() const { return kind_ == Kind::kBool && bool_; }
  double as_double() const;
  // Set when the number was written without fraction or exponent and fits in int64.
  std::optional<std::int64_t> as_exact_integer() const;
  // Empty when this is not a string (or not an array / object).
  const std::string& as_string() const;
  const std::vector<Json>& items() const;
  const std::vector<Member>& members() const;  // in the order they were first set

  // Object access: nullptr when absent (or when this is not an object).
  const Json* find(std::string_view key) const;
  // Builders (this must be an array / object).
  Json& push(Json value);
  Json& set(std::string key, Json value);  // a repeated key keeps its place and takes the new value

  // Compact when indent < 0, else pretty-printed with `indent` spaces. Always valid UTF-8: a
  // string built in C++ from bytes that are not UTF-8 has each bad byte written as U+FFFD.
  std::string dump(int indent = -1) const;

  // A short name of the kind, for error messages ("a string", "an array").
  static const char* kind_name(Kind kind);

 private:
  struct Object;  // members in order, and their index by key

  void destroy() noexcept;
  void copy_from(const Json& other);
  void dump_to(std::string& out, int indent, int depth) const;

  // Null, booleans and numbers live in the 16 bytes; strings, arrays and objects own one heap
  // block each (nullptr while empty). A value used to hold all of these side by side (104 bytes)
  // and a 10 MB array of numbers took 1.45 GB.
  Kind kind_ = Kind::kNull;
  bool integral_ = false;  // a number written as an integer literal that fits int64: integer_
  union {
    bool bool_;
    std::int64_t integer_;
    double number_;
    std::string* string_;
    std::vector<Json>* items_;
    Object* object_;
  };
};

namespace detail {

// The positions of an object's members by key. Small objects are scanned; from
// kScanMembers + 1 members on, an open-addressing table of positions (at most half full) finds a
// key in O(1) expected comparisons, so reading an n-key object is O(n), not O(n²).
class KeyIndex {
 public:
  static constexpr std::size_t kScanMembers = 8;

  // The position of `key` in `members`, or members.size() when absent.
  std::size_t find(std::string_view key, const std::vector<Json::Member>& members) const;
  // Records that members.back() was just appended (its key was not present).
  void appended(const std::vector<Json::Member>& members);
  // Key comparisons made so far by find(): a measure of work for tests.
  std::uint64_t key_comparisons() const { return key_comparisons_; }

 private:
  void rebuild(const std::vector<Json::Member>& members);

  std::vector<std::uint32_t> slots_;  // member position + 1; 0 = empty slot
  mutable std::uint64_t key_comparisons_ = 0;
};

}  // namespace detail

struct JsonParseResult {
  std::optional<Json> value;
  std::string error;  // empty on success; "line L, column C: what"
  // The document hit one of the limits below (size, depth, values), not a syntax error: it may be
  // valid JSON, too large for memfit to read.
  bool over_limit = false;
};

// The words for a failed parse of `what`: "is not valid JSON: ..." or, past a limit, "is too large
// for memfit to read: ...".
std::string json_parse_problem(const JsonParseResult& parsed);

// Limits of parse_json: each is checked before work in proportion to it.
inline constexpr std::size_t kJsonMaxDocumentBytes = std::size_t{16} << 20;  // 16 MiB
inline constexpr int kJsonMaxDepth = 64;                                      // nested arrays / objects
// Room for two per-layer lists at the schema's 100,000-layer limit; real configurations hold a
// few hundred values. It also bounds what a document can make the core say back (one warning
// per unknown key): a million keys cost 5 s and 620 MB in the command line, 200,000 fit 1 s.
inline constexpr std::size_t kJsonMaxValues = 200'000;

// Parses one JSON document (RFC 8259), whose strings must be valid UTF-8. Documents larger than
// kJsonMaxDocumentBytes, nested deeper than kJsonMaxDepth or holding more than kJsonMaxValues
// values are refused, so hostile input cannot exhaust the stack, memory or time.
JsonParseResult parse_json(std::string_view text);

}  // namespace memfit
