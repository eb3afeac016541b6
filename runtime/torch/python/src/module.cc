// tutti.torch._backend: the Python face of ProcessGroupTutti. tutti/torch/__init__.py registers
// ProcessGroupTutti as backend "tutti" with torch.distributed; this module only makes the class.
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include "process_group.hpp"

namespace py = pybind11;

namespace {

void run_without_gil(const std::function<void()>& f) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release released;
    f();
  } else {
    f();
  }
}

}  // namespace

PYBIND11_MODULE(_backend, m) {
  using tutti::torch_backend::ProcessGroupTutti;
  m.doc() = "tutti's torch.distributed backend (see tutti.torch)";
  tutti::torch_backend::set_gil_releaser(&run_without_gil);
  // tutti.torch registers it with atexit: see ProcessGroupTutti::stop_all_workers.
  m.def("_stop_workers", &ProcessGroupTutti::stop_all_workers,
        "Runs what every tutti group has queued and stops its worker thread (at exit)",
        py::call_guard<py::gil_scoped_release>());
  // The base class is torch's own Python class (held by intrusive_ptr, as torch holds it): on 1.13
  // its ProcessGroup, so DDP and torch.distributed take the object as any process group; on 2.x its
  // Backend, which torch.distributed wraps in a ProcessGroup for the devices it was registered for.
#if TUTTI_TORCH_BACKEND_API
  py::object base = py::module::import("torch._C._distributed_c10d").attr("Backend");
#else
  py::object base = py::module::import("torch.distributed").attr("ProcessGroup");
#endif
  py::class_<ProcessGroupTutti, c10::intrusive_ptr<ProcessGroupTutti>>(m, "ProcessGroupTutti", base)
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout, const std::string& address) {
             return ProcessGroupTutti::make(store, rank, size, timeout, address);
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("address") = std::string(),
           // Joining waits for the other ranks; their Python threads must run meanwhile.
           py::call_guard<py::gil_scoped_release>())
      .def_property_readonly("_openmp_note", &ProcessGroupTutti::openmp_note)
#if TUTTI_TORCH_BACKEND_API
      // torch 2.x makes a new group by splitting the default group's backend when that group is
      // bound to a device (init_process_group(device_id=...)) and has ranks outside the new group
      // call this, as NCCL's split needs every parent rank. tutti's members meet on the new
      // group's own store, so an outsider has nothing to do.
      .def("perform_nocolor_split", [](ProcessGroupTutti&, const py::object&) {})
#endif
      ;
}
