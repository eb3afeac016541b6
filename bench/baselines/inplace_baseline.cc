#include "baselines/inplace_baseline.hpp"

namespace tutti::bench {
namespace {

class InPlaceBaseline final : public Baseline {
 public:
  explicit InPlaceBaseline(Communicator comm) : comm_(std::move(comm)) {}
  std::string description() const override {
    return "tutti's own in-place allreduce on the same communicator (out of place: in place on "
           "the receive buffer, so its #wrong is not checked)";
  }
  bool supports(DataType, ReduceOp) const override { return true; }
  void prepare(void*, size_t, DataType, ReduceOp) override {}
  void allreduce(void* buf, size_t count, DataType type, ReduceOp op) override {
    comm_.allreduce(buf, buf, count, type, op);
  }
  // The same bytes moved as tutti's out-of-place call, only in place: on recv, whose contents
  // are the previous call's result (so no value is checked here; the in-place column is).
  void allreduce_out_of_place(const void*, void* recv, size_t count, DataType type,
                              ReduceOp op) override {
    comm_.allreduce(recv, recv, count, type, op);
  }
  bool checks_out_of_place() const override { return false; }

 private:
  Communicator comm_;
};

class InPlaceSession final : public BaselineSession {
 public:
  std::unique_ptr<Baseline> connect(Communicator& comm) override {
    return std::make_unique<InPlaceBaseline>(comm);
  }
};

}  // namespace

std::unique_ptr<BaselineSession> start_inplace_session() {
  return std::make_unique<InPlaceSession>();
}

}  // namespace tutti::bench
