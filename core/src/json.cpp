#include "memfit/json.hpp"

#include "text.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>

namespace memfit {

namespace {

// The length of the well-formed UTF-8 sequence at the start of `s` (1 to 4 bytes), or 0 when
// it is not one: a stray continuation byte, an overlong form, a surrogate, a code point past
// U+10FFFF, or a truncated sequence (Unicode 15, table 3-7).
std::size_t utf8_sequence_length(std::string_view s) {
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(s[i]); };
  const auto continuation = [&](std::size_t i, unsigned char lo = 0x80, unsigned char hi = 0xBF) {
    return i < s.size() && byte(i) >= lo && byte(i) <= hi;
  };
  if (s.empty()) return 0;
  const unsigned char b = byte(0);
  if (b < 0x80) return 1;
  if (b >= 0xC2 && b <= 0xDF) return continuation(1) ? 2 : 0;
  if (b >= 0xE0 && b <= 0xEF) {
    const unsigned char lo = b == 0xE0 ? 0xA0 : 0x80;  // E0: no overlong forms
    const unsigned char hi = b == 0xED ? 0x9F : 0xBF;  // ED: no surrogates
    return continuation(1, lo, hi) && continuation(2) ? 3 : 0;
  }
  if (b >= 0xF0 && b <= 0xF4) {
    const unsigned char lo = b == 0xF0 ? 0x90 : 0x80;  // F0: no overlong forms
    const unsigned char hi = b == 0xF4 ? 0x8F : 0xBF;  // F4: nothing past U+10FFFF
    return continuation(1, lo, hi) && continuation(2) && continuation(3) ? 4 : 0;
  }
  return 0;
}

// A byte named in an error message: printable ASCII as itself, anything else by its value, so
// that a message never carries a byte that is not valid UTF-8.
std::string describe_byte(char c) {
  const auto b = static_cast<unsigned char>(c);
  if (b > 0x20 && b < 0x7F) return std::string("'") + c + "'";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02X", static_cast<unsigned>(b));
  return buf;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  JsonParseResult run() {
    JsonParseResult result;
    if (text_.size() > kJsonMaxDocumentBytes) {
      result.error = "the document is " + detail::group_digits(static_cast<std::int64_t>(text_.size())) +
                     " bytes; the limit is 16 MiB (" +
                     detail::group_digits(static_cast<std::int64_t>(kJsonMaxDocumentBytes)) + " bytes)";
      result.over_limit = true;
      return result;
    }
    skip_space();
    Json value;
    if (!parse_value(value, 0)) {
      result.error = where() + error_;
      result.over_limit = over_limit_;
      return result;
    }
    skip_space();
    if (pos_ != text_.size()) {
      result.error = where() + "unexpected text after the end of the document";
      return result;
    }
    result.value = std::move(value);
    return result;
  }

 private:
  std::string where() const {
    std::size_t line = 1, column = 1;
    for (std::size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    return "line " + std::to_string(line) + ", column " + std::to_string(column) + ": ";
  }

  bool fail(std::string message) {
    error_ = std::move(message);
    return false;
  }

  void skip_space() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  bool parse_value(Json& out, int depth) {
    if (depth > kJsonMaxDepth) {
      over_limit_ = true;
      return fail("nesting deeper than 64 levels");
    }
    if (++values_ > kJsonMaxValues) {
      over_limit_ = true;
      return fail("more than " + detail::group_digits(static_cast<std::int64_t>(kJsonMaxValues)) +
                  " values in one document");
    }
    if (pos_ >= text_.size()) return fail("unexpected end of the document");
    const char c = text_[pos_];
    if (c == '{') return parse_object(out, depth);
    if (c == '[') return parse_array(out, depth);
    if (c == '"') {
      std::string s;
      if (!parse_string(s)) return false;
      out = Json::string(std::move(s));
      return true;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_number(out);
    if (literal("true")) {
      out = Json::boolean(true);
      return true;
    }
    if (literal("false")) {
      out = Json::boolean(false);
      return true;
    }
    if (literal("null")) {
      out = Json::null();
      return true;
    }
    // Python's json.dumps writes these for non-finite floats; name them plainly.
    if (literal("NaN") || literal("Infinity") || literal("-Infinity")) {
      return fail("NaN and Infinity are not valid JSON numbers");
    }
    return fail("unexpected " + describe_byte(c));
  }

  bool parse_object(Json& out, int depth) {
    ++pos_;  // '{'
    out = Json::object();
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == '}') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != '"') return fail("expected a quoted key");
      std::string key;
      if (!parse_string(key)) return false;
      skip_space();
      if (pos_ >= text_.size() || text_[pos_] != ':') return fail("expected ':' after a key");
      ++pos_;
      skip_space();
      Json value;
      if (!parse_value(value, depth + 1)) return false;
      out.set(std::move(key), std::move(value));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == '}') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or '}' in an object");
    }
  }

  bool parse_array(Json& out, int depth) {
    ++pos_;  // '['
    out = Json::array();
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == ']') {
      ++pos_;
      return true;
    }
    while (true) {
      skip_space();
      Json value;
      if (!parse_value(value, depth + 1)) return false;
      out.push(std::move(value));
      skip_space();
      if (pos_ < text_.size() && text_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < text_.size() && text_[pos_] == ']') {
        ++pos_;
        return true;
      }
      return fail("expected ',' or ']' in an array");
    }
  }

  static void append_utf8(std::string& out, std::uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (cp >> 18));
      out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  bool parse_hex4(std::uint32_t& out) {
    if (pos_ + 4 > text_.size()) return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = text_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9') out |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') out |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') out |= static_cast<std::uint32_t>(c - 'A' + 10);
      else return fail("invalid \\u escape");
    }
    return true;
  }

  bool parse_escape(std::string& out) {
    if (pos_ >= text_.size()) return fail("unterminated string");
    const char e = text_[pos_++];
    switch (e) {
      case '"': out += '"'; return true;
      case '\\': out += '\\'; return true;
      case '/': out += '/'; return true;
      case 'b': out += '\b'; return true;
      case 'f': out += '\f'; return true;
      case 'n': out += '\n'; return true;
      case 'r': out += '\r'; return true;
      case 't': out += '\t'; return true;
      case 'u': {
        std::uint32_t cp = 0;
        if (!parse_hex4(cp)) return false;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          std::uint32_t low = 0;
          if (!literal("\\u") || !parse_hex4(low) || low < 0xDC00 || low > 0xDFFF) {
            return fail("unpaired surrogate in a \\u escape");
          }
          cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          return fail("unpaired surrogate in a \\u escape");
        }
        append_utf8(out, cp);
        return true;
      }
      default: --pos_; return fail("invalid escape: \\ followed by " + describe_byte(e));
    }
  }

  // Copies each run of plain characters whole, checking that its bytes are UTF-8 on the way.
  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    while (pos_ < text_.size()) {
      const std::size_t run = pos_;
      while (pos_ < text_.size()) {
        const auto c = static_cast<unsigned char>(text_[pos_]);
        if (c == '"' || c == '\\' || c < 0x20) break;
        if (c < 0x80) {
          ++pos_;
          continue;
        }
        const std::size_t length = utf8_sequence_length(text_.substr(pos_));
        if (length == 0) return fail("invalid UTF-8 inside a string (" + describe_byte(text_[pos_]) + ")");
        pos_ += length;
      }
      out.append(text_.data() + run, pos_ - run);
      if (pos_ >= text_.size()) break;
      const char c = text_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (c != '\\') return fail("control character inside a string");
      ++pos_;
      if (!parse_escape(out)) return false;
    }
    return fail("unterminated string");
  }

  bool parse_number(Json& out) {
    const std::size_t start = pos_;
    bool integral = true;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) return fail("invalid number");
    if (text_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    }
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) return fail("invalid number");
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !(text_[pos_] >= '0' && text_[pos_] <= '9')) return fail("invalid number");
      while (pos_ < text_.size() && text_[pos_] >= '0' && text_[pos_] <= '9') ++pos_;
    }
    const std::string literal_text(text_.substr(start, pos_ - start));
    if (integral) {
      std::int64_t value = 0;
      const auto [ptr, ec] = std::from_chars(literal_text.data(), literal_text.data() + literal_text.size(), value);
      if (ec == std::errc() && ptr == literal_text.data() + literal_text.size()) {
        out = Json::integer(value);
        return true;
      }
    }
    const double value = std::strtod(literal_text.c_str(), nullptr);
    if (!std::isfinite(value)) return fail("number out of range");
    out = Json::number(value);
    return true;
  }

  std::string_view text_;
  std::size_t pos_ = 0;
  std::size_t values_ = 0;
  std::string error_;
  bool over_limit_ = false;
};

void append_escaped_slow(std::string& out, std::string_view s) {
  for (std::size_t i = 0; i < s.size();) {
    const char c = s[i];
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x80) {
      const std::size_t length = utf8_sequence_length(s.substr(i));
      if (length == 0) {
        out += "\\ufffd";  // not UTF-8: the replacement character, never the byte itself
        ++i;
      } else {
        out.append(s.data() + i, length);
        i += length;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (b < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(b));
          out += buf;
        } else {
          out += c;
        }
    }
    ++i;
  }
}

void append_escaped(std::string& out, std::string_view s) {
  out += '"';
  // Most strings need no escaping and are UTF-8 already: copy them whole.
  std::size_t plain = 0;
  while (plain < s.size()) {
    const auto b = static_cast<unsigned char>(s[plain]);
    if (b == '"' || b == '\\' || b < 0x20) break;
    if (b < 0x80) {
      ++plain;
      continue;
    }
    const std::size_t length = utf8_sequence_length(s.substr(plain));
    if (length == 0) break;
    plain += length;
  }
  out.append(s.data(), plain);
  if (plain < s.size()) append_escaped_slow(out, s.substr(plain));
  out += '"';
}

void newline(std::string& out, int indent, int depth) {
  if (indent < 0) return;
  out += '\n';
  out.append(static_cast<std::size_t>(indent * depth), ' ');
}

// What an absent string, array or object reads as. Function-local constants, never written.
const std::string& empty_string() {
  static const std::string empty;
  return empty;
}
const std::vector<Json>& empty_items() {
  static const std::vector<Json> empty;
  return empty;
}
const std::vector<Json::Member>& empty_members() {
  static const std::vector<Json::Member> empty;
  return empty;
}

}  // namespace

struct Json::Object {
  std::vector<Member> members;
  detail::KeyIndex index;
};

// ---- detail::KeyIndex

std::size_t detail::KeyIndex::find(std::string_view key, const std::vector<Json::Member>& members) const {
  if (slots_.empty()) {
    for (std::size_t i = 0; i < members.size(); ++i) {
      ++key_comparisons_;
      if (members[i].first == key) return i;
    }
    return members.size();
  }
  const std::size_t mask = slots_.size() - 1;
  for (std::size_t slot = std::hash<std::string_view>{}(key) & mask;; slot = (slot + 1) & mask) {
    const std::uint32_t entry = slots_[slot];
    if (entry == 0) return members.size();
    ++key_comparisons_;
    if (members[entry - 1].first == key) return entry - 1;
  }
}

void detail::KeyIndex::appended(const std::vector<Json::Member>& members) {
  const std::size_t count = members.size();
  if (count <= kScanMembers) return;
  if (slots_.empty() || 2 * count > slots_.size()) {
    rebuild(members);
    return;
  }
  const std::size_t mask = slots_.size() - 1;
  std::size_t slot = std::hash<std::string_view>{}(members.back().first) & mask;
  while (slots_[slot] != 0) slot = (slot + 1) & mask;
  slots_[slot] = static_cast<std::uint32_t>(count);
}

void detail::KeyIndex::rebuild(const std::vector<Json::Member>& members) {
  std::size_t size = 16;
  while (size < 4 * members.size()) size *= 2;  // a quarter full now, rebuilt at half full
  slots_.assign(size, 0);
  const std::size_t mask = size - 1;
  for (std::size_t i = 0; i < members.size(); ++i) {
    std::size_t slot = std::hash<std::string_view>{}(members[i].first) & mask;
    while (slots_[slot] != 0) slot = (slot + 1) & mask;
    slots_[slot] = static_cast<std::uint32_t>(i + 1);
  }
}

// ---- Json: construction, copy, move

Json::Json(const Json& other) : integer_(0) { copy_from(other); }

Json::Json(Json&& other) noexcept : kind_(other.kind_), integral_(other.integral_), integer_(other.integer_) {
  other.kind_ = Kind::kNull;
  other.integral_ = false;
  other.integer_ = 0;
}

Json& Json::operator=(const Json& other) {
  if (this != &other) {
    Json copy(other);  // `other` may live inside this value
    *this = std::move(copy);
  }
  return *this;
}

Json& Json::operator=(Json&& other) noexcept {
  if (this != &other) {
    // Take the payload before releasing ours: `other` may live inside this value.
    const Kind kind = other.kind_;
    const bool integral = other.integral_;
    const std::int64_t bits = other.integer_;
    other.kind_ = Kind::kNull;
    other.integral_ = false;
    other.integer_ = 0;
    destroy();
    kind_ = kind;
    integral_ = integral;
    integer_ = bits;
  }
  return *this;
}

Json::~Json() { destroy(); }

void Json::destroy() noexcept {
  switch (kind_) {
    case Kind::kString: delete string_; break;
    case Kind::kArray: delete items_; break;
    case Kind::kObject: delete object_; break;
    default: break;
  }
  kind_ = Kind::kNull;
  integral_ = false;
  integer_ = 0;
}

void Json::copy_from(const Json& other) {
  kind_ = other.kind_;
  integral_ = other.integral_;
  integer_ = other.integer_;  // every scalar's bits; pointers are replaced below
  switch (kind_) {
    case Kind::kString: string_ = other.string_ ? new std::string(*other.string_) : nullptr; break;
    case Kind::kArray: items_ = other.items_ ? new std::vector<Json>(*other.items_) : nullptr; break;
    case Kind::kObject: object_ = other.object_ ? new Object(*other.object_) : nullptr; break;
    default: break;
  }
}

Json Json::boolean(bool value) {
  Json j;
  j.kind_ = Kind::kBool;
  j.bool_ = value;
  return j;
}

Json Json::number(double value) {
  Json j;
  j.kind_ = Kind::kNumber;
  j.number_ = value;
  return j;
}

Json Json::integer(std::int64_t value) {
  Json j;
  j.kind_ = Kind::kNumber;
  j.integral_ = true;
  j.integer_ = value;
  return j;
}

Json Json::string(std::string value) {
  Json j;
  j.kind_ = Kind::kString;
  j.string_ = value.empty() ? nullptr : new std::string(std::move(value));
  return j;
}

Json Json::array() {
  Json j;
  j.kind_ = Kind::kArray;
  j.items_ = nullptr;
  return j;
}

Json Json::object() {
  Json j;
  j.kind_ = Kind::kObject;
  j.object_ = nullptr;
  return j;
}

// ---- Json: reading

double Json::as_double() const {
  if (kind_ != Kind::kNumber) return 0.0;
  return integral_ ? static_cast<double>(integer_) : number_;
}

std::optional<std::int64_t> Json::as_exact_integer() const {
  if (kind_ != Kind::kNumber) return std::nullopt;
  if (integral_) return integer_;
  // 4096.0 or 1e3 are integers too; accept them when exactly representable.
  if (std::isfinite(number_) && std::floor(number_) == number_ && std::fabs(number_) < 9.0e15) {
    return static_cast<std::int64_t>(number_);
  }
  return std::nullopt;
}

const std::string& Json::as_string() const {
  return kind_ == Kind::kString && string_ ? *string_ : empty_string();
}

const std::vector<Json>& Json::items() const { return kind_ == Kind::kArray && items_ ? *items_ : empty_items(); }

const std::vector<Json::Member>& Json::members() const {
  return kind_ == Kind::kObject && object_ ? object_->members : empty_members();
}

const Json* Json::find(std::string_view key) const {
  if (kind_ != Kind::kObject || !object_) return nullptr;
  const std::size_t at = object_->index.find(key, object_->members);
  return at < object_->members.size() ? &object_->members[at].second : nullptr;
}

// ---- Json: building

Json& Json::push(Json value) {
  if (kind_ != Kind::kArray) *this = array();
  if (!items_) items_ = new std::vector<Json>();
  items_->push_back(std::move(value));
  return items_->back();
}

Json& Json::set(std::string key, Json value) {
  if (kind_ != Kind::kObject) *this = object();
  if (!object_) object_ = new Object();
  std::vector<Member>& members = object_->members;
  const std::size_t at = object_->index.find(key, members);
  if (at < members.size()) {  // a repeated key: the last one wins, as in JavaScript and Python
    members[at].second = std::move(value);
    return members[at].second;
  }
  members.emplace_back(std::move(key), std::move(value));
  object_->index.appended(members);
  return members.back().second;
}

const char* Json::kind_name(Kind kind) {
  switch (kind) {
    case Kind::kNull: return "null";
    case Kind::kBool: return "a boolean";
    case Kind::kNumber: return "a number";
    case Kind::kString: return "a string";
    case Kind::kArray: return "an array";
    case Kind::kObject: return "an object";
  }
  return "a value";
}

// ---- Json: writing

std::string Json::dump(int indent) const {
  std::string out;
  out.reserve(4096);
  dump_to(out, indent, 0);
  return out;
}

void Json::dump_to(std::string& out, int indent, int depth) const {
  switch (kind_) {
    case Kind::kNull: out += "null"; break;
    case Kind::kBool: out += bool_ ? "true" : "false"; break;
    case Kind::kNumber: {
      if (integral_) {
        char buf[24];
        out.append(buf, std::to_chars(buf, buf + sizeof buf, integer_).ptr);
      } else if (std::isfinite(number_)) {
        out += detail::plain_number(number_);
      } else {
        out += "null";  // never produced by the core; JSON has no Infinity
      }
      break;
    }
    case Kind::kString: append_escaped(out, as_string()); break;
    case Kind::kArray: {
      const std::vector<Json>& list = items();
      out += '[';
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        list[i].dump_to(out, indent, depth + 1);
      }
      if (!list.empty()) newline(out, indent, depth);
      out += ']';
      break;
    }
    case Kind::kObject: {
      const std::vector<Member>& list = members();
      out += '{';
      for (std::size_t i = 0; i < list.size(); ++i) {
        if (i) out += ',';
        newline(out, indent, depth + 1);
        append_escaped(out, list[i].first);
        out += indent < 0 ? ":" : ": ";
        list[i].second.dump_to(out, indent, depth + 1);
      }
      if (!list.empty()) newline(out, indent, depth);
      out += '}';
      break;
    }
  }
}

JsonParseResult parse_json(std::string_view text) { return Parser(text).run(); }

std::string json_parse_problem(const JsonParseResult& parsed) {
  return (parsed.over_limit ? "is too large for memfit to read: " : "is not valid JSON: ") + parsed.error;
}

}  // namespace memfit
