#include "dovetail/apis/core/documents.h"

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dovetail::apis::core {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// Parses a one-document YAML text and returns `value` of `{value: <scalar>}`.
json ScalarOf(const std::string& yaml_scalar) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("value: " + yaml_scalar + "\n", "t.yaml");
  EXPECT_TRUE(docs.ok()) << docs.status();
  if (!docs.ok() || docs->size() != 1) return "<error>";
  return (*docs)[0].json["value"];
}

TEST(DocumentsTest, PlainScalarsAreTypedLikeKubernetesYaml) {
  EXPECT_EQ(ScalarOf("true"), json(true));
  EXPECT_EQ(ScalarOf("False"), json(false));
  EXPECT_EQ(ScalarOf("yes"), json(true));
  EXPECT_EQ(ScalarOf("off"), json(false));
  EXPECT_EQ(ScalarOf("~"), json(nullptr));
  EXPECT_EQ(ScalarOf("null"), json(nullptr));
  EXPECT_EQ(ScalarOf(""), json(nullptr));
  EXPECT_EQ(ScalarOf("42"), json(42));
  EXPECT_EQ(ScalarOf("-7"), json(-7));
  EXPECT_EQ(ScalarOf("+7"), json(7));
  EXPECT_EQ(ScalarOf("0x1F"), json(31));
  EXPECT_EQ(ScalarOf("0o17"), json(15));
  EXPECT_EQ(ScalarOf("0777"), json(511));
  EXPECT_EQ(ScalarOf("0b101"), json(5));
  EXPECT_EQ(ScalarOf("1_000"), json(1000));
  EXPECT_EQ(ScalarOf("18446744073709551615"), json(18446744073709551615ULL));
  EXPECT_EQ(ScalarOf("1.5"), json(1.5));
  EXPECT_TRUE(ScalarOf("1.5").is_number_float());
  EXPECT_EQ(ScalarOf("1e3"), json(1000.0));
  EXPECT_EQ(ScalarOf(".5"), json(0.5));
  EXPECT_EQ(ScalarOf("08"), json(8.0));
  EXPECT_EQ(ScalarOf("1.20"), json(1.2));
}

TEST(DocumentsTest, QuotedBlockAndNonNumericScalarsStayStrings) {
  EXPECT_EQ(ScalarOf("\"true\""), json("true"));
  EXPECT_EQ(ScalarOf("'1.5'"), json("1.5"));
  EXPECT_EQ(ScalarOf("\"null\""), json("null"));
  EXPECT_EQ(ScalarOf("10%"), json("10%"));
  EXPECT_EQ(ScalarOf("100m"), json("100m"));
  EXPECT_EQ(ScalarOf("1Gi"), json("1Gi"));
  EXPECT_EQ(ScalarOf("720h"), json("720h"));
  EXPECT_EQ(ScalarOf("2024-01-01T00:00:00Z"), json("2024-01-01T00:00:00Z"));
  EXPECT_EQ(ScalarOf("Norway"), json("Norway"));
  EXPECT_EQ(ScalarOf("_"), json("_"));
  EXPECT_EQ(ScalarOf("1.2.3"), json("1.2.3"));
  EXPECT_EQ(ScalarOf("0x"), json("0x"));
  EXPECT_EQ(ScalarOf("|\n  line one\n  line two"), json("line one\nline two\n"));
}

TEST(DocumentsTest, ExplicitTagsAreHonoured) {
  EXPECT_EQ(ScalarOf("!!str 5"), json("5"));
  EXPECT_EQ(ScalarOf("!!str true"), json("true"));
  EXPECT_EQ(ScalarOf("!!int \"5\""), json(5));
  EXPECT_EQ(ScalarOf("!!float 2"), json(2.0));
  EXPECT_EQ(ScalarOf("!custom text"), json("text"));
  absl::StatusOr<std::vector<ParsedDocument>> bad = ParseDocuments("a: !!int five\n", "t.yaml");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(bad.status().message()), StartsWith("t.yaml:1:4: "));
}

TEST(DocumentsTest, NonFiniteFloatsAreRejected) {
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments("a: 1\nb: .inf\n", "t.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(docs.status().message()),
              StartsWith("t.yaml:2:4: value .inf cannot be represented in JSON"));
}

TEST(DocumentsTest, AnchorsAliasesAndMergeKeysExpand) {
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments(R"(
base: &base
  cpu: 1
  memory: 2Gi
small:
  <<: *base
  cpu: 500m
list: [*base, *base]
)",
                                                                    "t.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  const json& doc = (*docs)[0].json;
  EXPECT_EQ(doc["small"], json::parse(R"({"cpu": "500m", "memory": "2Gi"})"));
  EXPECT_EQ(doc["list"][1], json::parse(R"({"cpu": 1, "memory": "2Gi"})"));
}

TEST(DocumentsTest, DuplicateKeysAreAnErrorAtTheSecondKey) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("metadata:\n  name: a\n  name: b\n", "dup.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(docs.status().message(), "dup.yaml:3:3: duplicate key \"name\"");
}

TEST(DocumentsTest, YamlSyntaxErrorNamesFileLineAndColumn) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("a: 1\nb: [1, 2\nc: 3\n", "broken.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(docs.status().message()),
              testing::MatchesRegex("broken\\.yaml:[0-9]+:[0-9]+: YAML syntax error: .*"));
}

TEST(DocumentsTest, DocumentPositionsAndFieldPositionsAreOneBased) {
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments(R"(# leading comment
---
---
apiVersion: v1
kind: Pod
spec:
  containers:
    - name: a
      image: x
    - name: b
---
kind: Node
)",
                                                                    "pods.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 2);  // the empty documents are skipped
  EXPECT_EQ((*docs)[0].position, (SourcePosition{"pods.yaml", 4, 1}));
  EXPECT_EQ((*docs)[1].position, (SourcePosition{"pods.yaml", 12, 1}));
  EXPECT_EQ((*docs)[0].position.ToString(), "pods.yaml:4:1");
  const auto& fields = (*docs)[0].field_positions;
  EXPECT_EQ(fields.at("spec"), (LineColumn{6, 1}));
  EXPECT_EQ(fields.at("spec.containers[1]"), (LineColumn{10, 7}));
  EXPECT_EQ(fields.at("spec.containers[1].name"), (LineColumn{10, 7}));
  EXPECT_EQ(fields.at("spec.containers[0].image"), (LineColumn{9, 7}));
}

TEST(DocumentsTest, JsonStreamsAreSplitWithPositions) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("  {\"a\": \"}{\"}\n\n[1]\n{\"b\": {\"c\": [true]}}", "s.json");
  ASSERT_TRUE(docs.ok()) << docs.status();
  ASSERT_EQ(docs->size(), 3);
  EXPECT_EQ((*docs)[0].json, json::parse(R"({"a": "}{"})"));
  EXPECT_EQ((*docs)[0].position, (SourcePosition{"s.json", 1, 3}));
  EXPECT_EQ((*docs)[1].position, (SourcePosition{"s.json", 3, 1}));
  EXPECT_EQ((*docs)[2].json, json::parse(R"({"b": {"c": [true]}})"));
  EXPECT_EQ((*docs)[2].position, (SourcePosition{"s.json", 4, 1}));
}

TEST(DocumentsTest, JsonSyntaxErrorIsReportedAtTheOffendingCharacter) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("{\"a\": 1}\n{\n  \"b\": tru\n}\n", "bad.json");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(docs.status().message()), StartsWith("bad.json:3:"));
  EXPECT_THAT(std::string(docs.status().message()), HasSubstr("JSON syntax error"));
}

TEST(DocumentsTest, FlowStyleYamlIsAcceptedAfterTheFirstCharacter) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("a: {b: [x, y, z]}\n", "f.yaml");
  ASSERT_TRUE(docs.ok()) << docs.status();
  // `y` is a YAML 1.1 boolean, as in Kubernetes' YAML decoding.
  EXPECT_EQ((*docs)[0].json, json::parse(R"({"a": {"b": ["x", true, "z"]}})"));
  // A stream starting with a bracket is JSON, as with kubectl.
  EXPECT_EQ(ParseDocuments("{a: 1}", "f").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DocumentsTest, InputsThatStallTheYamlParserAreRejected) {
  for (const char* text : {",", ", x", "a: 1\n---\n,\n"}) {
    absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments(text, "stall.yaml");
    EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument) << text;
    EXPECT_THAT(std::string(docs.status().message()),
                testing::MatchesRegex("stall\\.yaml:[0-9]+:[0-9]+: YAML syntax error: .*"))
        << text;
  }
}

TEST(DocumentsTest, InvalidUtf8IsRejectedWithPosition) {
  absl::StatusOr<std::vector<ParsedDocument>> docs =
      ParseDocuments("a: b\nc: \xff\xfe\n", "bin.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(docs.status().message(), "bin.yaml:2:4: invalid UTF-8");
}

TEST(DocumentsTest, ByteOrderMarkIsIgnored) {
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments("\xEF\xBB\xBFkind: Pod\n", "b");
  ASSERT_TRUE(docs.ok()) << docs.status();
  EXPECT_EQ((*docs)[0].json["kind"], "Pod");
}

TEST(DocumentsTest, DeepNestingIsRejectedNotOverflowed) {
  const std::string deep_json = std::string(100000, '[') + std::string(100000, ']');
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments(deep_json, "deep.json");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(docs.status().message()), HasSubstr("nesting deeper than"));

  std::string deep_yaml = "a: ";
  for (int i = 0; i < 300; ++i) deep_yaml += "[";
  deep_yaml += "1";
  for (int i = 0; i < 300; ++i) deep_yaml += "]";
  docs = ParseDocuments(deep_yaml, "deep.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(DocumentsTest, AliasBombsAreBounded) {
  std::string bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n";
  char prev = 'a';
  for (char c = 'b'; c <= 'j'; ++c) {
    bomb += std::string(1, c) + ": &" + c + " [";
    for (int i = 0; i < 10; ++i) bomb += std::string(i ? ", *" : "*") + prev;
    bomb += "]\n";
    prev = c;
  }
  absl::StatusOr<std::vector<ParsedDocument>> docs = ParseDocuments(bomb, "bomb.yaml");
  EXPECT_EQ(docs.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(docs.status().message()), HasSubstr("too many nodes"));
}

TEST(DocumentsTest, OffsetToLineColumnCountsLinesAndBytes) {
  EXPECT_EQ(OffsetToLineColumn("ab\ncd", 0), (LineColumn{1, 1}));
  EXPECT_EQ(OffsetToLineColumn("ab\ncd", 3), (LineColumn{2, 1}));
  EXPECT_EQ(OffsetToLineColumn("ab\ncd", 4), (LineColumn{2, 2}));
  EXPECT_EQ(OffsetToLineColumn("ab\ncd", 99), (LineColumn{2, 3}));
}

}  // namespace
}  // namespace dovetail::apis::core
