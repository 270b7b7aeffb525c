// A small, strict JSON reader and writer.
//
// memfit reads JSON in three places (the configuration, a pasted Hugging Face config.json, the
// command line's --config) and writes it in two (the CLI's --json and the wasm boundary). A
// general-purpose library would cost more page weight than the rest of the core together and
// reports errors by throwing; this one is ~300 lines, never throws, keeps object keys in order,
// keeps integers exact up to int64, and reports errors as data with a byte offset.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memfit {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Member = std::pair<std::string, Json>;

  Json() = default;
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

  bool as_bool() const { return bool_; }
  double as_double() const { return number_; }
  // Set when the number was written without fraction or exponent and fits in int64.
  std::optional<std::int64_t> as_exact_integer() const;
  const std::string& as_string() const { return string_; }
  const std::vector<Json>& items() const { return items_; }
  const std::vector<Member>& members() const { return members_; }

  // Object access: nullptr when absent (or when this is not an object).
  const Json* find(std::string_view key) const;
  // Builders (this must be an array / object).
  Json& push(Json value);
  Json& set(std::string key, Json value);

  // Compact when indent < 0, else pretty-printed with `indent` spaces.
  std::string dump(int indent = -1) const;

  // A short name of the kind, for error messages ("a string", "an array").
  static const char* kind_name(Kind kind);

 private:
  void dump_to(std::string& out, int indent, int depth) const;

  Kind kind_ = Kind::kNull;
  bool bool_ = false;
  bool integral_ = false;  // written as an integer literal that fits int64
  std::int64_t integer_ = 0;
  double number_ = 0.0;
  std::string string_;
  std::vector<Json> items_;
  std::vector<Member> members_;
};

struct JsonParseResult {
  std::optional<Json> value;
  std::string error;  // empty on success; "line L, column C: what"
};

// Parses one JSON document (RFC 8259). Nesting deeper than 64 levels and documents larger than
// 16 MiB are refused, so hostile input cannot exhaust the stack or memory.
JsonParseResult parse_json(std::string_view text);

}  // namespace memfit
