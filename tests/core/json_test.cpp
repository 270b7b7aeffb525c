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
