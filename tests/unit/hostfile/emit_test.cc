#include "hostfile/emit.hpp"

#include <gtest/gtest.h>

#include "hostfile/parse.hpp"
#include "tutti/error.hpp"

namespace tutti::hostfile {
namespace {

Hostfile sample() {
  return Hostfile{
      {Host{"a", 2, std::nullopt}, Host{"b.job.ns.svc", 1, 4}, Host{"c", 8, std::nullopt}}};
}

TEST(Emit, EachFormat) {
  EXPECT_EQ(emit(sample(), Format::kOpenMpi),
            "a slots=2\nb.job.ns.svc slots=1 max_slots=4\nc slots=8\n");
  EXPECT_EQ(emit(sample(), Format::kMpich), "a:2\nb.job.ns.svc:1\nc:8\n");
  EXPECT_EQ(emit(sample(), Format::kIntel), "a:2\nb.job.ns.svc:1\nc:8\n");
  EXPECT_EQ(emit(sample(), Format::kPlain), "a\nb.job.ns.svc\nc\n");
}

class RoundTrip : public ::testing::TestWithParam<Format> {};
TEST_P(RoundTrip, ParseOfEmitKeepsHostsAndSlots) {
  Hostfile back = parse(emit(sample(), GetParam()), "emitted");
  ASSERT_EQ(back.hosts.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(back.hosts[i].name, sample().hosts[i].name);
    if (GetParam() != Format::kPlain) {
      EXPECT_EQ(back.hosts[i].slots, sample().hosts[i].slots);
    }
  }
  if (GetParam() == Format::kOpenMpi) {
    EXPECT_EQ(back, sample());
  }
}
INSTANTIATE_TEST_SUITE_P(Formats, RoundTrip,
                         ::testing::Values(Format::kOpenMpi, Format::kMpich, Format::kIntel,
                                           Format::kPlain));

TEST(Format, NamesRoundTripAndUnknownIsConfig) {
  for (Format f : {Format::kOpenMpi, Format::kMpich, Format::kIntel, Format::kPlain})
    EXPECT_EQ(parse_format(format_name(f)), f);
  try {
    parse_format("slurm");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kConfig);
    EXPECT_NE(std::string(e.what()).find("slurm"), std::string::npos);
  }
}

}  // namespace
}  // namespace tutti::hostfile
