// The C API's errors speak C: a C caller is told to call tutti_init(), not tutti::init().
#include <gtest/gtest.h>

#include <string>

#include "tutti/tutti.h"

namespace {

TEST(CApi, CallsBeforeInitSayToCallTuttiInit) {
  ASSERT_EQ(tutti_initialized(), 0);
  float x = 1;
  for (int rc : {tutti_rank(), tutti_size(), tutti_barrier(),
                 tutti_allreduce(&x, &x, 1, TUTTI_FLOAT32, TUTTI_SUM)}) {
    EXPECT_EQ(rc, TUTTI_ERR_NOT_INITIALIZED);
    std::string message = tutti_last_error();
    EXPECT_NE(message.find("call tutti_init()"), std::string::npos) << message;
    EXPECT_EQ(message.find("tutti::"), std::string::npos) << message;
  }
}

}  // namespace
