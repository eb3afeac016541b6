// The C API's errors speak C: a C caller is told to call tutti_init(), not tutti::init().
#include <gtest/gtest.h>

#include <string>

#include "tutti/async.hpp"
#include "tutti/error.hpp"
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

// GPU buffers on a host without a device (this machine) or a libtutti without CUDA: asking for a
// stream's readiness is a clear TUTTI_ERR_DEVICE naming the CUDA side, never a crash.
TEST(CApi, DeviceErrorsHaveTheirOwnCode) {
  EXPECT_STREQ(tutti_error_name(TUTTI_ERR_DEVICE), "TUTTI_ERR_DEVICE");
  EXPECT_EQ(tutti_set_stream(nullptr), 0);
  try {
    tutti::cuda_stream_ready(nullptr);
    GTEST_SKIP() << "a CUDA device exists here: the no-device error cannot be seen";
  } catch (const tutti::Error& e) {
    EXPECT_EQ(e.code(), tutti::ErrorCode::kDevice) << e.what();
    const std::string message = e.what();
    EXPECT_TRUE(message.find("CUDA") != std::string::npos ||
                message.find("cuda") != std::string::npos)
        << message;
  }
}

}  // namespace
