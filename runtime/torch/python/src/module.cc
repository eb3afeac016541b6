// tutti.torch._backend: the Python face of ProcessGroupTutti. tutti/torch/__init__.py registers
// ProcessGroupTutti as backend "tutti" with torch.distributed; this module only makes the class.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"

namespace py = pybind11;

namespace tutti::torch_backend {
namespace {

// The Python object's holder: an intrusive_ptr that lets go of the GIL while it drops its
// reference. Destroying a process group joins its worker thread, and that thread may need the
// GIL to finish (dropping the last reference to a tensor that Python has seen takes it), while
// Python destroys groups holding the GIL (destroy_process_group). torch holds its own backends
// the same way; the layout is a single intrusive_ptr, as torch's casts to the base expect.
template <typename T>
class ReleasesGilOnDestruction {
 public:
  ReleasesGilOnDestruction() = default;
  // pybind11 makes a holder from a raw pointer only for an object some intrusive_ptr owns already.
  explicit ReleasesGilOnDestruction(T* raw)
      : ptr_(c10::intrusive_ptr<T>::unsafe_reclaim_from_nonowning(raw)) {}
  explicit ReleasesGilOnDestruction(c10::intrusive_ptr<T> ptr) : ptr_(std::move(ptr)) {}
  ReleasesGilOnDestruction(const ReleasesGilOnDestruction&) = default;
  ReleasesGilOnDestruction& operator=(const ReleasesGilOnDestruction&) = default;
  ~ReleasesGilOnDestruction() {
    if (ptr_ && PyGILState_Check()) {
      py::gil_scoped_release released;
      ptr_.reset();
    }
  }
  T* get() const { return ptr_.get(); }

 private:
  c10::intrusive_ptr<T> ptr_;
};

}  // namespace
}  // namespace tutti::torch_backend

PYBIND11_DECLARE_HOLDER_TYPE(T, tutti::torch_backend::ReleasesGilOnDestruction<T>, true)

PYBIND11_MODULE(_backend, m) {
  using tutti::torch_backend::ProcessGroupTutti;
  using Holder = tutti::torch_backend::ReleasesGilOnDestruction<ProcessGroupTutti>;
  m.doc() = "tutti's torch.distributed backend (see tutti.torch)";
  // The base class is torch's own Python ProcessGroup, so DDP and torch.distributed take the
  // object as any process group.
  py::object base = py::module::import("torch.distributed").attr("ProcessGroup");
  py::class_<ProcessGroupTutti, Holder>(m, "ProcessGroupTutti", base)
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout) {
             return Holder(c10::make_intrusive<ProcessGroupTutti>(store, rank, size, timeout));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           // Joining waits for the other ranks; their Python threads must run meanwhile.
           py::call_guard<py::gil_scoped_release>());
}
