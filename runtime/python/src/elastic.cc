// tutti.elastic's engine: tutti::elastic::State and run() (api/elastic.cc) bound for Python, so
// that Python runs the one recovery loop C++ runs instead of a copy of it. tutti/elastic.py adds
// what is Python's own: arrays by attribute, keyword construction, communicators as
// tutti.Communicator.
//
// The loop runs without the GIL and takes it for each piece of Python it calls: the work, the
// reset callbacks, and a Python State's restore and sync (tutti.torch.elastic.TorchState saves a
// model and an optimizer in them). What that Python raises is made into what the loop reads:
// tutti.Error into tutti::Error with its code (the loop decides which it survives), and
// MembershipChanged into the C++ one. An exception the loop does not handle comes out of
// tutti.elastic.run as it was raised, with its traceback.
#include "elastic.hpp"

#include <pybind11/stl.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "py_comm.hpp"
#include "tutti/elastic.hpp"

namespace py = pybind11;

namespace tutti::python {
namespace {

PyObject* g_membership_changed = nullptr;  // tutti._core.MembershipChanged (an Exception)

// A tutti.Error raised by Python code inside the loop: the loop reads its code and message, and
// the original (with its traceback) is raised again when the loop lets it out.
class RaisedInPython : public Error {
 public:
  RaisedInPython(ErrorCode code, const std::string& message, py::error_already_set raised)
      : Error(code, message), raised_(std::move(raised)) {}
  const py::error_already_set& raised() const { return raised_; }

 private:
  py::error_already_set raised_;
};

// Runs Python code for the loop, with the GIL (taken again when already held).
template <typename Call>
void call_python(Call&& call) {
  py::gil_scoped_acquire gil;
  try {
    call();
  } catch (py::error_already_set& e) {
    if (e.matches(g_membership_changed))
      throw elastic::MembershipChanged(e.value().attr("epoch").cast<int64_t>());
    // A tutti.Error without a code (raised by hand) is not one the loop could survive.
    if (e.matches(error_type()) && py::hasattr(e.value(), "code"))
      throw RaisedInPython(e.value().attr("code").cast<ErrorCode>(),
                           py::str(e.value()).cast<std::string>(), e);
    throw;
  }
}

py::object python_comm(const Communicator& comm) {
  return py::module_::import("tutti").attr("Communicator")(made_now(comm));
}

// A State whose Python subclass may define restore and sync (each calling the base's _restore
// and _sync): the loop's calls reach them.
class PyState : public elastic::State {
 public:
  void restore() override {
    if (!call_override("restore", [](const py::function& f) { f(); })) elastic::State::restore();
  }
  void sync(const Communicator& comm, int root) override {
    if (!call_override("sync", [&](const py::function& f) { f(python_comm(comm), root); }))
      elastic::State::sync(comm, root);
  }

 private:
  template <typename Call>
  bool call_override(const char* name, Call&& call) {
    bool found = false;
    call_python([&] {
      const py::function f = py::get_override(static_cast<const elastic::State*>(this), name);
      if (!f) return;
      found = true;
      call(f);
    });
    return found;
  }
};

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// The bytes of a writable C-contiguous buffer (numpy array), which the caller keeps alive.
std::span<std::byte> writable_bytes(const py::buffer& buffer, const std::string& name) {
  const py::buffer_info info = buffer.request(/*writable=*/true);
  py::ssize_t expected = info.itemsize;
  for (py::ssize_t d = info.ndim - 1; d >= 0; --d) {
    if (info.shape[d] > 1 && info.strides[d] != expected)
      invalid("elastic.State.add: '" + name + "' must be a C-contiguous array");
    expected *= info.shape[d];
  }
  return {static_cast<std::byte*>(info.ptr), static_cast<size_t>(info.size * info.itemsize)};
}

}  // namespace

void bind_elastic(py::module_& m) {
  g_membership_changed = PyErr_NewExceptionWithDoc(
      "tutti._core.MembershipChanged",
      "Raised by State.commit() inside tutti.elastic.run when the launcher published a new "
      "membership (ranks joined); every member raises it at the same commit, and run regroups. "
      "`epoch` is the new membership.",
      PyExc_Exception, nullptr);
  m.attr("MembershipChanged") = py::handle(g_membership_changed);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const elastic::MembershipChanged& changed) {
      py::object error =
          py::reinterpret_borrow<py::object>(g_membership_changed)(py::str(changed.what()));
      error.attr("epoch") = changed.epoch();
      PyErr_SetObject(g_membership_changed, error.ptr());
    }
  });

  // Collective calls release the GIL; a MembershipChanged or tutti::Error from them becomes the
  // Python exception.
  py::class_<elastic::State, PyState>(m, "ElasticState")
      .def(py::init<>())
      .def("_add", [](elastic::State& s, const std::string& name,
                      const py::buffer& buffer) { s.add(name, writable_bytes(buffer, name)); })
      .def("_commit",
           [](elastic::State& s) {
             py::gil_scoped_release unlocked;
             s.elastic::State::commit();
           })
      .def("_restore", [](elastic::State& s) { s.elastic::State::restore(); })
      .def("_sync",
           [](elastic::State& s, const PyComm& held, int root) {
             const Communicator& comm = live(held);
             py::gil_scoped_release unlocked;
             s.elastic::State::sync(comm, root);
           })
      .def("_on_reset",
           [](elastic::State& s, py::function callback) {
             s.on_reset([callback = std::move(callback)](const Communicator& comm) {
               call_python([&] { callback(made_now(comm)); });
             });
           })
      .def_property_readonly("commits", &elastic::State::commits);

  m.def(
      "_elastic_run",
      [](const py::function& work, elastic::State& state, const PyComm& held, int max_resets,
         int min_size, int wait_for_size, std::optional<double> wait_timeout_s) -> PyComm {
        elastic::RunOptions options;
        options.max_resets = max_resets;
        options.min_size = min_size;
        options.wait_for_size = wait_for_size;
        if (wait_timeout_s) {
          if (!std::isfinite(*wait_timeout_s) || !(*wait_timeout_s > 0))
            invalid("elastic.run: wait_timeout must be a positive number of seconds");
          options.wait_timeout =
              std::chrono::milliseconds(static_cast<int64_t>(*wait_timeout_s * 1000.0 + 0.5));
        }
        Communicator comm = live(held);
        Communicator last;
        try {
          py::gil_scoped_release unlocked;
          last = elastic::run(
              std::move(comm), state,
              [&work](const Communicator& c) { call_python([&] { work(made_now(c)); }); }, options);
        } catch (const RaisedInPython& e) {
          throw py::error_already_set(e.raised());
        }
        return made_now(std::move(last));
      },
      py::arg("work"), py::arg("state"), py::arg("comm"), py::arg("max_resets"),
      py::arg("min_size"), py::arg("wait_for_size"), py::arg("wait_timeout"));
}

}  // namespace tutti::python
