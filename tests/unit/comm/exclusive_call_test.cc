#include "comm/exclusive_call.hpp"

#include <gtest/gtest.h>

#include <string>

#include "tutti/error.hpp"

namespace tutti::comm {
namespace {

// What a second thread's call meets while `gate` is held: refused (kInvalidArgument naming the
// call and the rank), after `refused` ran.
bool second_call_refused(CallGate& gate, int& refusals) {
  try {
    ExclusiveCall second(gate, 4, "allreduce", [&] { ++refusals; });
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("allreduce on rank 4: another thread"), std::string::npos)
        << e.what();
    return true;
  }
  return false;
}

TEST(ExclusiveCall, AloneTheCallFinishesAndTheNextEnters) {
  CallGate gate;
  int refusals = 0;
  {
    ExclusiveCall call(gate, 4, "allreduce", [&] { ++refusals; });
    EXPECT_TRUE(call.finish());
  }
  {
    ExclusiveCall next(gate, 4, "allreduce", [&] { ++refusals; });
    EXPECT_TRUE(next.finish());
  }
  EXPECT_EQ(refusals, 0);
}

TEST(ExclusiveCall, ARefusalWhileHeldFailsTheHolderToo) {
  CallGate gate;
  int refusals = 0;
  {
    ExclusiveCall holder(gate, 4, "allreduce", [] {});
    EXPECT_TRUE(second_call_refused(gate, refusals));
    EXPECT_EQ(refusals, 1);
    // The holder got through its work, but another thread was refused meanwhile: it must fail,
    // and it still holds the gate until it has (a third thread is refused as well).
    EXPECT_FALSE(holder.finish());
    EXPECT_TRUE(second_call_refused(gate, refusals));
  }
  // Gone, the holder left the gate idle: the next call is the first of its own.
  ExclusiveCall next(gate, 4, "allreduce", [] {});
  EXPECT_TRUE(next.finish());
}

TEST(ExclusiveCall, ARefusalAfterTheHolderLeftIsNoCollision) {
  CallGate gate;
  int refusals = 0;
  {
    ExclusiveCall holder(gate, 4, "allreduce", [] {});
    EXPECT_TRUE(holder.finish());
    // Left: a call now enters (threads that take turns are not detected).
    ExclusiveCall next(gate, 4, "allreduce", [&] { ++refusals; });
    EXPECT_TRUE(next.finish());
  }
  EXPECT_EQ(refusals, 0);
}

TEST(ExclusiveCall, TheAbortingThreadLeavesNoMark) {
  CallGate gate;
  {
    ExclusiveCall holder(gate, 4, "allreduce", [] {});
    // abort() from another thread looks for an idle gate to send its notices; finding the call
    // there is not a second call.
    EXPECT_FALSE(gate.enter_if_idle());
    EXPECT_TRUE(holder.finish());
  }
  EXPECT_TRUE(gate.enter_if_idle());
  int refusals = 0;
  EXPECT_TRUE(second_call_refused(gate, refusals));  // held by the aborting thread now
  gate.leave();
  ExclusiveCall next(gate, 4, "allreduce", [] {});
  EXPECT_TRUE(next.finish());
}

}  // namespace
}  // namespace tutti::comm
