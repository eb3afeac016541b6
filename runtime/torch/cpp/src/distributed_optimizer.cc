// DistributedOptimizer: gradient hooks on the accumulators, one engine allreduce per parameter,
// and the wait in step().
#include <c10/util/StringUtil.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>

#include <mutex>
#include <unordered_map>

#include "tutti/torch_optimizer.hpp"

namespace tutti::torchx {

struct HookLink {
  DistributedOptimizer::Impl* owner;
};

class DistributedOptimizer::Impl {
 public:
  Impl(torch::optim::Optimizer& optimizer,
       const torch::OrderedDict<std::string, torch::Tensor>& named_parameters,
       DistributedOptimizerOptions options, const Communicator& comm);
  ~Impl();

  // Autograd is about to add a gradient into the parameter: refused while the previous one is
  // still on the wire (before the addition, so the buffer in flight is never touched).
  void before_accumulation(size_t index);
  void on_gradient_accumulated(size_t index);
  void synchronize();
  void zero_grad();

  torch::optim::Optimizer& optimizer;
  DistributedOptimizerOptions options;

 private:
  // One hooked parameter and the state of its gradient in the current step.
  struct Slot {
    std::string name;  // the engine name
    torch::Tensor param;
    // Kept alive: the tensor holds it weakly. A shared_ptr in libtorch 1.13, an intrusive_ptr
    // in 2.x.
    decltype(torch::autograd::impl::grad_accumulator(
        std::declval<const torch::Tensor&>())) accumulator;
    uintptr_t hook_key = 0;
    int passes = 0;  // backward passes accumulated since the last step
    bool in_flight = false;
    Work work;
    torch::Tensor wire;  // the compressed copy on the wire, when compressing
  };

  void enqueue(Slot& slot);
  void wait_all_in_flight() noexcept;

  Communicator comm_;
  std::vector<Slot> slots_;
  // What the hooks reach this object through. 1.13 cannot remove a pre hook, so the destructor
  // cuts the link instead: a hook that outlives this object does nothing.
  std::shared_ptr<HookLink> link_;
  std::mutex mutex_;  // hooks may run on autograd's threads
};

namespace {

struct BeforeAccumulationHook : torch::autograd::FunctionPreHook {
  BeforeAccumulationHook(std::shared_ptr<HookLink> link, size_t index)
      : link(std::move(link)), index(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& grads) override {
    if (link->owner) link->owner->before_accumulation(index);
    return grads;
  }
  std::shared_ptr<HookLink> link;
  size_t index;
};

struct GradientAccumulatedHook : torch::autograd::FunctionPostHook {
  GradientAccumulatedHook(std::shared_ptr<HookLink> link, size_t index)
      : link(std::move(link)), index(index) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    if (link->owner) link->owner->on_gradient_accumulated(index);
    return outputs;
  }
  std::shared_ptr<HookLink> link;
  size_t index;
};

c10::ScalarType wire_type(Compression c) {
  return c == Compression::kFloat16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16;
}

}  // namespace

DistributedOptimizer::Impl::Impl(torch::optim::Optimizer& optimizer,
                                 const torch::OrderedDict<std::string, torch::Tensor>& named,
                                 DistributedOptimizerOptions options, const Communicator& comm)
    : optimizer(optimizer),
      options(std::move(options)),
      comm_(comm),
      link_(std::make_shared<HookLink>(HookLink{this})) {
  if (this->options.backward_passes_per_step < 1)
    throw Error(ErrorCode::kInvalidArgument,
                c10::str("tutti::torchx::DistributedOptimizer: backward_passes_per_step must be "
                         "at least 1, not ",
                         this->options.backward_passes_per_step));
  std::unordered_map<const void*, std::string> name_of;
  for (const auto& item : named) name_of.emplace(item.value().unsafeGetTensorImpl(), item.key());
  std::unordered_map<std::string, size_t> seen;
  size_t index = 0;
  for (auto& group : optimizer.param_groups()) {
    for (auto& param : group.params()) {
      const size_t position = index++;
      if (!param.requires_grad()) continue;
      auto it = name_of.find(param.unsafeGetTensorImpl());
      const std::string name = this->options.name_prefix +
                               (it != name_of.end() ? it->second : c10::str("param.", position));
      if (!seen.emplace(name, position).second)
        throw Error(ErrorCode::kInvalidArgument,
                    c10::str("tutti::torchx::DistributedOptimizer: parameter '", name,
                             "' appears twice in the optimizer's param groups"));
      check_tensor(param, "parameter '" + name + "'");
      if (!param.is_leaf())
        throw Error(ErrorCode::kInvalidArgument,
                    "tutti::torchx::DistributedOptimizer: parameter '" + name +
                        "' is not a leaf tensor, so autograd accumulates no gradient into it");
      Slot slot;
      slot.name = name;
      slot.param = param;
      slots_.push_back(std::move(slot));
    }
  }
  // Hooks go on after slots_ stops growing: they hold an index into it.
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& s = slots_[i];
    s.accumulator = torch::autograd::impl::grad_accumulator(s.param);
    s.accumulator->add_pre_hook(std::make_unique<BeforeAccumulationHook>(link_, i));
    s.hook_key = s.accumulator->add_post_hook(std::make_unique<GradientAccumulatedHook>(link_, i));
  }
}

DistributedOptimizer::Impl::~Impl() {
  link_->owner = nullptr;
  wait_all_in_flight();
  for (Slot& s : slots_)
    if (s.accumulator) s.accumulator->del_post_hook(s.hook_key);
}

void DistributedOptimizer::Impl::before_accumulation(size_t index) {
  std::lock_guard lock(mutex_);
  const Slot& slot = slots_[index];
  if (slot.in_flight)
    throw Error(ErrorCode::kInvalidArgument,
                c10::str("tutti::torchx::DistributedOptimizer: the gradient of '", slot.name,
                         "' was produced again while its allreduce is in flight: call step() "
                         "after every ",
                         options.backward_passes_per_step,
                         " backward pass(es) (backward_passes_per_step)"));
}

void DistributedOptimizer::Impl::on_gradient_accumulated(size_t index) {
  std::lock_guard lock(mutex_);
  Slot& slot = slots_[index];
  if (++slot.passes < options.backward_passes_per_step) return;
  enqueue(slot);
}

void DistributedOptimizer::Impl::enqueue(Slot& slot) {
  torch::NoGradGuard no_grad;
  torch::Tensor grad = slot.param.grad();
  if (!grad.defined()) {
    // No gradient reached this parameter (unused in this step's graph): the others may have one,
    // so it still takes part, with zeros.
    slot.param.mutable_grad() = torch::zeros_like(slot.param);
    grad = slot.param.grad();
  }
  double scale = 1.0 / comm_.size();
  if (options.average_aggregated_gradients && slot.passes > 1) scale /= slot.passes;
  AsyncOptions scaling;
  scaling.prescale = scale;
  // Sum with the 1/size (and 1/k) factor applied to the inputs: the same mean as kAvg, and in
  // half precision it cannot overflow where the sum of unscaled gradients would.
  if (options.compression == Compression::kNone) {
    slot.work = allreduce_async(slot.name, grad, ReduceOp::kSum, scaling, comm_);
  } else {
    slot.wire = grad.to(wire_type(options.compression));
    slot.work = allreduce_async(slot.name, slot.wire, ReduceOp::kSum, scaling, comm_);
  }
  slot.in_flight = true;
}

void DistributedOptimizer::Impl::synchronize() {
  std::lock_guard lock(mutex_);
  for (Slot& s : slots_)
    if (!s.in_flight) enqueue(s);
  std::exception_ptr first_error;
  for (Slot& s : slots_) {
    try {
      s.work.wait();
      if (s.wire.defined()) {
        torch::NoGradGuard no_grad;
        s.param.mutable_grad().copy_(s.wire);
      }
    } catch (...) {
      if (!first_error) first_error = std::current_exception();
    }
    s.in_flight = false;
    s.passes = 0;
    s.work = Work();
    s.wire = torch::Tensor();
  }
  if (first_error) std::rethrow_exception(first_error);
}

void DistributedOptimizer::Impl::zero_grad() {
  {
    std::lock_guard lock(mutex_);
    for (const Slot& s : slots_)
      if (s.in_flight)
        throw Error(ErrorCode::kInvalidArgument,
                    "tutti::torchx::DistributedOptimizer: zero_grad() while the gradient of '" +
                        s.name +
                        "' is being allreduced (after backward(), before step() or "
                        "synchronize()): zeroing it now would corrupt the average");
  }
  optimizer.zero_grad();
}

void DistributedOptimizer::Impl::wait_all_in_flight() noexcept {
  for (Slot& s : slots_) {
    if (!s.in_flight) continue;
    try {
      s.work.handle().wait();
    } catch (...) {
      // The engine failed it: its buffers are no longer in use, which is all that matters here.
    }
  }
}

DistributedOptimizer::DistributedOptimizer(
    torch::optim::Optimizer& optimizer,
    const torch::OrderedDict<std::string, torch::Tensor>& named_parameters,
    DistributedOptimizerOptions options, const Communicator& comm)
    : impl_(std::make_unique<Impl>(optimizer, named_parameters, std::move(options), comm)) {}
DistributedOptimizer::~DistributedOptimizer() = default;
DistributedOptimizer::DistributedOptimizer(DistributedOptimizer&&) noexcept = default;
DistributedOptimizer& DistributedOptimizer::operator=(DistributedOptimizer&&) noexcept = default;

void DistributedOptimizer::synchronize() {
  impl_->synchronize();
}
void DistributedOptimizer::step() {
  impl_->synchronize();
  impl_->optimizer.step();
}
void DistributedOptimizer::zero_grad() {
  impl_->zero_grad();
}
torch::optim::Optimizer& DistributedOptimizer::wrapped() {
  return impl_->optimizer;
}
const DistributedOptimizerOptions& DistributedOptimizer::options() const {
  return impl_->options;
}

}  // namespace tutti::torchx
