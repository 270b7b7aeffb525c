#include <gtest/gtest.h>

#include <string>

#include "memfit/json.hpp"

namespace memfit {
namespace {

TEST(Json, ParsesAndDumpsExactIntegers) {
  const auto r = parse_json(R"({"a":[1,-2,9007199254740993,true,null,"x\u00e9\n"],"b":{"c":0.85}})");
  ASSERT_TRUE(r.value) << r.error;
  EXPECT_EQ(*r.value->find("a")->items()[2].as_exact_integer(), 9007199254740993LL);
  EXPECT_EQ(r.value->dump(), R"({"a":[1,-2,9007199254740993,true,null,"xé\n"],"b":{"c":0.85}})");
}

TEST(Json, RejectsHostileDocumentsWithAPosition) {
  EXPECT_NE(parse_json("{\"a\":").error.find("line 1"), std::string::npos);
  EXPECT_NE(parse_json("[NaN]").error.find("NaN"), std::string::npos);
  EXPECT_NE(parse_json("\"\\ud800\"").error.find("surrogate"), std::string::npos);
  EXPECT_NE(parse_json(std::string(100, '[')).error.find("deeper than 64"), std::string::npos);
  EXPECT_NE(parse_json("1e999").error.find("out of range"), std::string::npos);
  EXPECT_NE(parse_json("{} x").error.find("after the end"), std::string::npos);
  EXPECT_FALSE(parse_json("").value);
  EXPECT_FALSE(parse_json("01").value);
}

TEST(Json, ALimitIsToldApartFromASyntaxError) {
  // A valid document past a limit is "too large", not "not valid JSON" (a Hugging Face config.json
  // with a 200,000-entry id2label is valid JSON).
  std::string many = "[";
  for (int i = 0; i < 200'001; ++i) many += i ? ",0" : "0";
  many += "]";
  const auto values = parse_json(many);
  EXPECT_FALSE(values.value);
  EXPECT_TRUE(values.over_limit);
  EXPECT_EQ(json_parse_problem(values).rfind("is too large for memfit to read: line 1, column ", 0), 0u) << values.error;
  EXPECT_NE(values.error.find("more than 200,000 values"), std::string::npos);
  const auto deep = parse_json(std::string(100, '['));
  EXPECT_TRUE(deep.over_limit);
  const auto big = parse_json(std::string((std::size_t{16} << 20) + 1, ' '));
  EXPECT_TRUE(big.over_limit);
  EXPECT_NE(big.error.find("the limit is 16 MiB"), std::string::npos);
  const auto syntax = parse_json("{\"a\":");
  EXPECT_FALSE(syntax.over_limit);
  EXPECT_EQ(json_parse_problem(syntax).rfind("is not valid JSON: line 1", 0), 0u);
}

TEST(Json, IntegerValuedFloatsAreIntegers) {
  EXPECT_EQ(*parse_json("4096.0").value->as_exact_integer(), 4096);
  EXPECT_EQ(*parse_json("1e3").value->as_exact_integer(), 1000);
  EXPECT_FALSE(parse_json("2.5").value->as_exact_integer());
}

}  // namespace
}  // namespace memfit

namespace memfit {
namespace {

TEST(Json, NumbersPrintShortAndReadBackExactly) {
  for (const double v : {0.85, 0.1, -2.5, 1e-9, 123456.789, 0.30000000000000004, 1.0 / 3.0, 6.02e23, 0.0}) {
    const std::string text = Json::number(v).dump();
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
  }
  EXPECT_EQ(Json::number(0.85).dump(), "0.85");
  EXPECT_EQ(Json::number(2.0).dump(), "2");
  EXPECT_EQ(Json::number(-0.05).dump(), "-0.05");
}

}  // namespace
}  // namespace memfit

// ---- Bounded work on hostile input (issue 10, items 2 and 10)

namespace memfit {
namespace {

std::string object_with_keys(std::size_t count) {
  std::string text = "{";
  for (std::size_t i = 0; i < count; ++i) {
    if (i) text += ',';
    text += "\"k" + std::to_string(i) + "\":" + std::to_string(i);
  }
  return text + "}";
}

// An object read by scanning its member list made an 80,000-key object cost 80,000² / 2 = 3.2e9
// key comparisons (44 s). The key index makes each insert and lookup O(1) expected comparisons.
TEST(JsonKeyIndex, EightyThousandKeysCostLinearComparisons) {
  constexpr std::size_t kKeys = 80'000;
  std::vector<Json::Member> members;
  detail::KeyIndex index;
  for (std::size_t i = 0; i < kKeys; ++i) {
    const std::string key = "k" + std::to_string(i);
    ASSERT_EQ(index.find(key, members), members.size());  // absent, as Json::set checks first
    members.emplace_back(key, Json::integer(static_cast<std::int64_t>(i)));
    index.appended(members);
  }
  for (std::size_t i = 0; i < kKeys; ++i) ASSERT_EQ(index.find("k" + std::to_string(i), members), i);
  // 2 × 80,000 operations; a table at most half full probes ~1.5 keys on a hit, fewer on a miss.
  EXPECT_LT(index.key_comparisons(), 4 * kKeys) << "not linear: " << index.key_comparisons();
}

TEST(JsonKeyIndex, SmallObjectsAreScanned) {
  std::vector<Json::Member> members;
  detail::KeyIndex index;
  for (std::size_t i = 0; i < detail::KeyIndex::kScanMembers; ++i) {
    members.emplace_back(std::string(1, static_cast<char>('a' + i)), Json());
    index.appended(members);
  }
  EXPECT_EQ(index.find("c", members), 2u);
  EXPECT_EQ(index.key_comparisons(), 3u);  // a, b, c
  EXPECT_EQ(index.find("z", members), members.size());
}

TEST(Json, LargeObjectsKeepKeyOrderAndTheLastRepeatedValue) {
  const auto r = parse_json(object_with_keys(80'000));
  ASSERT_TRUE(r.value) << r.error;
  const auto& members = r.value->members();
  ASSERT_EQ(members.size(), 80'000u);
  for (std::size_t i = 0; i < members.size(); i += 997) {
    EXPECT_EQ(members[i].first, "k" + std::to_string(i));
    EXPECT_EQ(r.value->find("k" + std::to_string(i))->as_exact_integer(), static_cast<std::int64_t>(i));
  }
  EXPECT_EQ(r.value->find("k80000"), nullptr);
  // A repeated key keeps its first place and takes its last value (JavaScript's and Python's rule),
  // in a small object and in one past the scan threshold.
  EXPECT_EQ(parse_json(R"({"a":1,"b":2,"a":3})").value->dump(), R"({"a":3,"b":2})");
  std::string big = object_with_keys(20);
  big.back() = ',';
  big += R"("k3":"again"})";
  const Json again = *parse_json(big).value;
  EXPECT_EQ(again.members().size(), 20u);
  EXPECT_EQ(again.members()[3].second.as_string(), "again");
}

// Each value used to cost 104 bytes (a string, two vectors and three scalars side by side) and
// a 10 MB array took 1.45 GB. Now a value is 16 bytes, and a scalar owns no heap block.
TEST(Json, AValueIsSixteenBytes) {
  static_assert(sizeof(Json) == 16);
  std::string text = "[0";
  for (std::size_t i = 1; i + 1 < kJsonMaxValues; ++i) text += ",0";  // the array + 199,999 zeros
  text += "]";
  const auto r = parse_json(text);
  ASSERT_TRUE(r.value) << r.error;
  const std::size_t bytes = r.value->items().capacity() * sizeof(Json);
  EXPECT_LE(bytes, 2 * kJsonMaxValues * 16);  // 199,999 × 16 bytes, doubled at most by growth
}

TEST(Json, RefusesOversizedDocumentsBeforeReadingThem) {
  // 17 MiB of '[' would fail on depth if the reader looked at it: the size is checked first.
  const std::string huge(kJsonMaxDocumentBytes + 1, '[');
  const std::string error = parse_json(huge).error;
  EXPECT_NE(error.find("16 MiB"), std::string::npos) << error;
  EXPECT_EQ(error.find("deeper"), std::string::npos) << error;
}

TEST(Json, RefusesDeepNestingAtTheLimit) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  EXPECT_TRUE(parse_json(nested(kJsonMaxDepth)).value);
  EXPECT_NE(parse_json(nested(kJsonMaxDepth + 2)).error.find("deeper than 64"), std::string::npos);
  // A million '[' stops at the 65th, not at the end.
  EXPECT_NE(parse_json(std::string(1'000'000, '[')).error.find("column 66"), std::string::npos);
}

TEST(Json, RefusesMoreValuesThanAnyConfigurationHolds) {
  std::string text = "[0";
  for (std::size_t i = 1; i < kJsonMaxValues; ++i) text += ",0";  // the array + 200,000 zeros
  text += "]";
  EXPECT_NE(parse_json(text).error.find("more than 200,000 values"), std::string::npos);
  text.resize(text.size() - 3);  // the array + 199,999 zeros
  EXPECT_TRUE(parse_json(text + "]").value);
}

// ---- UTF-8: refused on the way in, never written out (issue 10, item 10)

TEST(Json, RefusesStringsThatAreNotUtf8) {
  for (const char* bad : {"\"\xff\"", "\"a\x80\"", "\"\xc0\xaf\"", "\"\xe0\x80\xaf\"", "\"\xed\xa0\x80\"",
                          "\"\xf4\x90\x80\x80\"", "\"\xe2\x82\"", "\"\xf0\x9f\x98\"", "{\"\xfe\":1}"}) {
    const JsonParseResult r = parse_json(bad);
    EXPECT_FALSE(r.value) << bad;
    EXPECT_NE(r.error.find("invalid UTF-8"), std::string::npos) << r.error;
    // The message names the byte by value: it is itself ASCII, so it can go into JSON as it is.
    for (const char c : r.error) EXPECT_LT(static_cast<unsigned char>(c), 0x80) << r.error;
  }
  const JsonParseResult outside = parse_json("\xff");
  EXPECT_NE(outside.error.find("unexpected byte 0xFF"), std::string::npos) << outside.error;
  // Well-formed sequences of each length, the highest code point and escapes still read.
  const auto ok = parse_json("\"a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\\u00e9\"");
  ASSERT_TRUE(ok.value) << ok.error;
  EXPECT_EQ(ok.value->as_string(), "a\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf\xc3\xa9");
}

TEST(Json, WritesEachByteThatIsNotUtf8AsTheReplacementCharacter) {
  EXPECT_EQ(Json::string("a\xff" "b").dump(), "\"a\\ufffdb\"");
  EXPECT_EQ(Json::string("\xc0\xaf").dump(), "\"\\ufffd\\ufffd\"");               // overlong '/'
  EXPECT_EQ(Json::string("\xed\xa0\x80").dump(), "\"\\ufffd\\ufffd\\ufffd\"");    // a surrogate
  EXPECT_EQ(Json::string("\xe2\x82").dump(), "\"\\ufffd\\ufffd\"");               // truncated
  EXPECT_EQ(Json::string("\"\xc3\xa9\xff\n").dump(), "\"\\\"\xc3\xa9\\ufffd\\n\"");  // with escapes
  Json object = Json::object();
  object.set("k\xff", Json::string("\xe2\x82\xac"));
  EXPECT_EQ(object.dump(), "{\"k\\ufffd\":\"\xe2\x82\xac\"}");
  // Whatever the bytes, the output reads back: the reader refuses anything that is not UTF-8.
  EXPECT_TRUE(parse_json(Json::string(std::string("\x80\xbf\xfe\xff\xf8\x88\x80\x80\x80", 9)).dump()).value);
}

// ---- Values own their storage

TEST(Json, CopiesAreDeepAndAssigningAPartOfItselfIsSafe) {
  Json a = *parse_json(R"({"x":[1,{"y":"z"}],"s":"text"})").value;
  Json b = a;
  b.set("s", Json::string("other"));
  EXPECT_EQ(a.find("s")->as_string(), "text");
  Json inner = *a.find("x");
  a = inner;  // from a copy
  EXPECT_EQ(a.dump(), R"([1,{"y":"z"}])");
  a = a.items()[1];  // from a part of itself, by copy
  EXPECT_EQ(a.dump(), R"({"y":"z"})");
  Json c = b;
  c = std::move(*const_cast<Json*>(c.find("x")));  // from a part of itself, by move
  EXPECT_EQ(c.dump(), R"([1,{"y":"z"}])");
  EXPECT_EQ(Json().as_string(), "");
  EXPECT_TRUE(Json::array().items().empty());
  EXPECT_EQ(Json::array().dump(), "[]");
  EXPECT_EQ(Json::object().dump(), "{}");
  EXPECT_EQ(Json::string("").dump(), "\"\"");
}

}  // namespace
}  // namespace memfit
