#include "core/shared_library.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace tutti {
namespace {

constexpr const char* kNoSuchLibrary = "libtutti-no-such-library.so.0";

TEST(SharedLibrary, OpensTheFirstCandidateThatLoadsAndBindsItsSymbols) {
  const char* names[] = {kNoSuchLibrary, "libm.so.6"};
  SharedLibrary library(names, SharedLibrary::Scope::kLocal);
  ASSERT_TRUE(library.loaded()) << library.load_errors();
  EXPECT_EQ(library.name(), "libm.so.6");
  double (*cosine)(double) = nullptr;
  library.bind("cos", cosine);
  ASSERT_NE(cosine, nullptr);
  EXPECT_EQ(cosine(0.0), 1.0);
  EXPECT_EQ(library.missing(), "");
}

TEST(SharedLibrary, NamesTheSymbolsItLacks) {
  const char* names[] = {"libm.so.6"};
  SharedLibrary library(names, SharedLibrary::Scope::kLocal);
  ASSERT_TRUE(library.loaded());
  void (*first)() = nullptr;
  void (*second)() = nullptr;
  double (*sine)(double) = nullptr;
  library.bind("tutti_no_such_symbol", first);
  library.bind("sin", sine);
  library.bind("tutti_no_such_symbol_either", second);
  EXPECT_EQ(first, nullptr);
  EXPECT_EQ(second, nullptr);
  EXPECT_NE(sine, nullptr);
  EXPECT_EQ(library.missing(), "tutti_no_such_symbol, tutti_no_such_symbol_either");
}

TEST(SharedLibrary, SaysWhyNoCandidateLoaded) {
  const char* names[] = {kNoSuchLibrary, "libtutti-nor-this.so.1"};
  SharedLibrary library(names, SharedLibrary::Scope::kGlobal);
  EXPECT_FALSE(library.loaded());
  const std::string& errors = library.load_errors();
  EXPECT_NE(errors.find(kNoSuchLibrary), std::string::npos) << errors;
  EXPECT_NE(errors.find("; "), std::string::npos) << errors;
  EXPECT_NE(errors.find("libtutti-nor-this.so.1"), std::string::npos) << errors;
  void (*anything)() = nullptr;
  library.bind("malloc", anything);
  EXPECT_EQ(anything, nullptr);
  EXPECT_EQ(library.missing(), "malloc");
}

TEST(SharedLibrary, FindsWhatTheProcessAlreadyHas) {
  SharedLibrary process = SharedLibrary::process("this process");
  EXPECT_TRUE(process.loaded());
  EXPECT_EQ(process.name(), "this process");
  void* (*allocate)(size_t) = nullptr;
  process.bind("malloc", allocate);
  EXPECT_NE(allocate, nullptr);
  EXPECT_EQ(process.missing(), "");
}

}  // namespace
}  // namespace tutti
