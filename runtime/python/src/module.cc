// tutti._core: tutti's communicators and collectives for any Python buffer (buffer protocol or
// DLPack; BufferView), blocking calls and the engine's asynchronous ones. The package `tutti`
// (tutti/__init__.py) wraps it: it picks in-place or new outputs and gives results back in the
// caller's kind of array. Every call releases the GIL while tutti works; tutti::Error becomes
// tutti.Error with its code.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <exception>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "buffer_view.hpp"
#include "elastic.hpp"
#include "py_comm.hpp"
#include "sigint_watch.hpp"
#include "tutti/tutti.hpp"

namespace py = pybind11;

namespace tutti::python {
namespace {

using Access = BufferView::Access;

PyObject* g_error_type = nullptr;  // tutti._core.Error (a RuntimeError)

[[noreturn]] void invalid(const std::string& message) {
  throw Error(ErrorCode::kInvalidArgument, message);
}

// A Python int that tutti takes as a C int (a color, key, rank, root, peer or tag): anything else
// is tutti.Error (INVALID_ARGUMENT) naming the call, the argument and the range, not pybind11's
// "incompatible function arguments" (which a value past 32 bits used to give).
int64_t integer(py::handle value, const std::string& call, const std::string& name, int64_t low,
                int64_t high) {
  py::object index = py::reinterpret_steal<py::object>(PyNumber_Index(value.ptr()));
  if (!index) {
    PyErr_Clear();
    invalid(call + ": " + name + " must be an integer, not " +
            std::string(Py_TYPE(value.ptr())->tp_name));
  }
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(index.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) PyErr_Clear();
  if (overflow != 0 || v < low || v > high)
    invalid(call + ": " + name + " " + py::repr(index).cast<std::string>() + " is outside " +
            std::to_string(low) + ".." + std::to_string(high));
  return v;
}

int c_int(py::handle value, const std::string& call, const std::string& name) {
  return static_cast<int>(integer(value, call, name, INT_MIN, INT_MAX));
}

// Runs `call` (tutti's part of a blocking call) without the GIL, registered for Ctrl-C
// (sigint_watch.hpp): a Ctrl-C aborts the communicator, and the call raises what Python's SIGINT
// handler raises (KeyboardInterrupt) instead of tutti's error.
template <typename Call>
auto blocking(const Communicator& comm, Call&& call) -> decltype(call()) {
  BlockingCall registered(comm);
  try {
    py::gil_scoped_release unlocked;
    return call();
  } catch (const Error&) {
    BlockingCall::raise_pending_signal();
    throw;
  }
}

std::unique_ptr<BufferView> view(const py::handle& object, Access access, const std::string& what,
                                 bool optional = false) {
  if (object.is_none()) {
    if (optional) return nullptr;
    invalid(what + ": None where a buffer is needed");
  }
  return std::make_unique<BufferView>(object.ptr(), access, what);
}

void same_type(const BufferView& a, const BufferView& b, const std::string& op) {
  if (a.type() != b.type()) invalid(op + ": the input's and the output's element types differ");
}

void expect_count(const BufferView& v, size_t count, const std::string& what) {
  if (v.count() != count)
    invalid(what + " holds " + std::to_string(v.count()) + " elements where " +
            std::to_string(count) + " are needed");
}

CallOptions call_options(std::optional<double> timeout_s, double prescale = 1.0,
                         double postscale = 1.0) {
  CallOptions call;
  if (timeout_s) {
    if (!(*timeout_s > 0)) invalid("timeout must be a positive number of seconds");
    call.timeout = std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000.0 + 0.5));
  }
  call.prescale = prescale;
  call.postscale = postscale;
  return call;
}

// An engine operation and the buffers it reads and writes, which must outlive it: the views are
// kept until wait() sees it finish (or the handle goes, after waiting for it).
class PyHandle {
 public:
  PyHandle(Handle handle, std::vector<std::unique_ptr<BufferView>> views)
      : handle_(std::move(handle)), views_(std::move(views)) {}
  ~PyHandle() {
    // A handle dropped while tutti still uses its buffers: wait, so they stay valid until then
    // (errors are the caller's to collect with wait(); here they are dropped).
    if (!views_.empty() && handle_ && !handle_.poll()) {
      py::gil_scoped_release unlocked;
      try {
        handle_.wait();
      } catch (const Error&) {
      }
    }
  }
  bool done() const { return handle_.poll(); }
  // `comm`: the communicator the operation runs on, if the caller still has it, for Ctrl-C to
  // abort (the handle holds none: it must not keep a finalized world's engine alive).
  void wait(std::optional<double> timeout_s, const PyComm* comm) {
    std::exception_ptr failure;
    {
      std::optional<BlockingCall> registered;
      if (comm != nullptr) registered.emplace(comm->comm);
      py::gil_scoped_release unlocked;
      try {
        if (timeout_s)
          handle_.wait(std::chrono::milliseconds(static_cast<int64_t>(*timeout_s * 1000.0 + 0.5)));
        else
          handle_.wait();
      } catch (...) {
        failure = std::current_exception();
      }
    }
    // Finished (done or failed): tutti no longer touches the buffers. A wait that timed out
    // keeps them.
    if (handle_.poll()) views_.clear();
    if (failure) {
      BlockingCall::raise_pending_signal();
      std::rethrow_exception(failure);
    }
  }
  int last_joined() const { return handle_.last_joined(); }

 private:
  Handle handle_;
  std::vector<std::unique_ptr<BufferView>> views_;
};

void translate(const Error& e) {
  py::object type = py::reinterpret_borrow<py::object>(g_error_type);
  py::object error = type(py::str(e.what()));
  error.attr("code") =
      py::module_::import("tutti._core").attr("ErrorCode")(static_cast<int>(e.code()));
  PyErr_SetObject(g_error_type, error.ptr());
}

// The plain call's fast path, _core._allreduce_buffers(comm, send, recv, op):
// Communicator.allreduce of tutti/__init__.py takes it for buffers (numpy arrays) with no timeout
// or scales. CPython's vectorcall and two stack Py_buffers, with none of pybind11's argument
// conversion or BufferView's heap: at 8 bytes the general path cost 1.87 us over the C++ call
// (docs/PERFORMANCE.md). Returns True once done; False, with nothing done and no error set, for
// anything it does not take (no buffer protocol, a format tutti does not reduce, a read-only
// output, types or counts that differ): the general path then says what is wrong. op is a
// ReduceOp's value.
PyObject* allreduce_buffers(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "_allreduce_buffers(comm, send, recv, op)");
    return nullptr;
  }
  const PyComm* held = nullptr;
  try {
    held = py::handle(args[0]).cast<const PyComm*>();
  } catch (const py::cast_error&) {
    PyErr_SetString(PyExc_TypeError, "_allreduce_buffers: not a tutti communicator");
    return nullptr;
  }
  const long op = PyLong_AsLong(args[3]);
  if (op == -1 && PyErr_Occurred()) return nullptr;
  if (op < 0 || op >= kNumReduceOps) {
    PyErr_Format(PyExc_ValueError, "_allreduce_buffers: %ld is not a ReduceOp's value", op);
    return nullptr;
  }
  const bool in_place = args[1] == args[2];
  struct Buffer {
    Py_buffer view{};
    bool held = false;
    bool take(PyObject* object, int flags) {
      held = PyObject_CheckBuffer(object) && PyObject_GetBuffer(object, &view, flags) == 0;
      if (!held) PyErr_Clear();
      return held;
    }
    ~Buffer() {
      if (held) PyBuffer_Release(&view);
    }
  } in, out;
  constexpr int kRead = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
  if (!out.take(args[2], kRead | PyBUF_WRITABLE)) Py_RETURN_FALSE;
  if (!in_place && !in.take(args[1], kRead)) Py_RETURN_FALSE;
  const Py_buffer& send = in_place ? out.view : in.view;
  DataType type{}, out_type{};
  if (!type_of_format(send.format ? send.format : "B", static_cast<size_t>(send.itemsize), type) ||
      !type_of_format(out.view.format ? out.view.format : "B",
                      static_cast<size_t>(out.view.itemsize), out_type) ||
      type != out_type || send.len != out.view.len)
    Py_RETURN_FALSE;
  const size_t count = static_cast<size_t>(send.len / send.itemsize);
  const void* data = send.buf;
  void* result = out.view.buf;
  try {
    const Communicator& comm = live(*held);
    BlockingCall registered(comm);
    // No py::gil_scoped_release: its bookkeeping costs more than the two calls it wraps.
    PyThreadState* unlocked = PyEval_SaveThread();
    try {
      comm.allreduce(data, result, count, type, static_cast<ReduceOp>(op));
    } catch (...) {
      PyEval_RestoreThread(unlocked);
      throw;
    }
    PyEval_RestoreThread(unlocked);
  } catch (const Error& e) {
    if (PyErr_CheckSignals() != 0) return nullptr;  // Ctrl-C: KeyboardInterrupt, not tutti's abort
    translate(e);
    return nullptr;
  } catch (py::error_already_set& e) {
    e.restore();  // a signal handler's exception, raised before the call
    return nullptr;
  } catch (const std::exception& e) {
    PyErr_SetString(PyExc_RuntimeError, e.what());
    return nullptr;
  }
  Py_RETURN_TRUE;
}

PyMethodDef g_allreduce_buffers{
    "_allreduce_buffers",
    reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&allreduce_buffers)), METH_FASTCALL,
    "The plain allreduce's fast path (see tutti)."};

}  // namespace

PyObject* error_type() {
  return g_error_type;
}

}  // namespace tutti::python

PYBIND11_MODULE(_core, m) {
  using namespace tutti;
  using namespace tutti::python;
  m.doc() = "tutti's communicators and collectives on buffers (numpy, DLPack); see tutti";

  py::enum_<ErrorCode>(m, "ErrorCode")
      .value("INVALID_ARGUMENT", ErrorCode::kInvalidArgument)
      .value("NOT_INITIALIZED", ErrorCode::kNotInitialized)
      .value("TIMEOUT", ErrorCode::kTimeout)
      .value("PEER_FAILURE", ErrorCode::kPeerFailure)
      .value("MISMATCH", ErrorCode::kMismatch)
      .value("AUTH", ErrorCode::kAuth)
      .value("SYSTEM", ErrorCode::kSystem)
      .value("CONFIG", ErrorCode::kConfig)
      .value("INTERNAL", ErrorCode::kInternal)
      .value("ABORTED", ErrorCode::kAborted)
      .value("DEVICE", ErrorCode::kDevice);
  py::enum_<ReduceOp>(m, "ReduceOp")
      .value("SUM", ReduceOp::kSum)
      .value("PROD", ReduceOp::kProd)
      .value("MIN", ReduceOp::kMin)
      .value("MAX", ReduceOp::kMax)
      .value("AVG", ReduceOp::kAvg)
      .value("BAND", ReduceOp::kBand)
      .value("BOR", ReduceOp::kBor)
      .value("BXOR", ReduceOp::kBxor);

  g_error_type = PyErr_NewExceptionWithDoc(
      "tutti._core.Error",
      "A tutti call failed. `code` (tutti.ErrorCode) says how; the message names the rank, the "
      "peer and what to do.",
      PyExc_RuntimeError, nullptr);
  m.attr("Error") = py::handle(g_error_type);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const Error& e) {
      translate(e);
    }
  });

  m.def("init", []() -> PyComm {
    Communicator world;
    {
      py::gil_scoped_release unlocked;
      world = tutti::init();
    }
    return made_now(std::move(world));
  });
  m.def("finalize", [] {
    // Communicators made so far belong to the world that ends here (live()); counted before it
    // ends, so that no call on them starts meanwhile.
    if (tutti::initialized()) ++g_worlds_finalized;
    py::gil_scoped_release unlocked;
    tutti::finalize();
  });
  m.def("world", []() -> PyComm { return made_now(tutti::world()); });
  m.add_object("_allreduce_buffers",
               py::reinterpret_steal<py::object>(PyCFunction_New(&g_allreduce_buffers, nullptr)));
  // The watcher of Ctrl-C (sigint_watch.hpp) takes the GIL only before the interpreter exits.
  py::module_::import("atexit").attr("register")(
      py::cpp_function([] { stop_sigint_watch(); }, py::name("_stop_sigint_watch")));

  py::class_<PyHandle>(m, "Handle")
      .def("done", &PyHandle::done)
      .def("wait", &PyHandle::wait, py::arg("timeout") = py::none(), py::arg("comm") = nullptr)
      .def_property_readonly("last_joined", &PyHandle::last_joined);

  py::class_<PyComm>(m, "Communicator")
      .def_property_readonly("rank", [](const PyComm& c) { return live(c).rank(); })
      .def_property_readonly("size", [](const PyComm& c) { return live(c).size(); })
      .def_property_readonly("local_rank", [](const PyComm& c) { return live(c).local_rank(); })
      .def_property_readonly("local_size", [](const PyComm& c) { return live(c).local_size(); })
      .def_property_readonly("cross_rank", [](const PyComm& c) { return live(c).cross_rank(); })
      .def_property_readonly("cross_size", [](const PyComm& c) { return live(c).cross_size(); })
      .def("split",
           [](const PyComm& held, py::handle color, py::handle key) -> std::optional<PyComm> {
             const Communicator& c = live(held);
             const int color_value = c_int(color, "split", "color");
             const int key_value = c_int(key, "split", "key");
             Communicator made = blocking(c, [&] { return c.split(color_value, key_value); });
             if (!made) return std::nullopt;
             return made_now(std::move(made));
           })
      .def("group",
           [](const PyComm& held, const py::sequence& ranks) {
             const Communicator& c = live(held);
             std::vector<int> listed;
             for (py::handle r : ranks) listed.push_back(c_int(r, "group", "a rank"));
             return made_now(blocking(c, [&] { return c.group(listed); }));
           })
      .def("dup",
           [](const PyComm& held) {
             const Communicator& c = live(held);
             return made_now(blocking(c, [&] { return c.dup(); }));
           })
      .def("shrink",
           [](const PyComm& held) {
             const Communicator& c = live(held);
             return made_now(blocking(c, [&] { return c.shrink(); }));
           })
      .def("membership_epoch",
           [](const PyComm& held) {
             const Communicator& c = live(held);
             return blocking(c, [&] { return c.membership_epoch(); });
           })
      .def("regroup",
           [](const PyComm& held, py::handle epoch) {
             const Communicator& c = live(held);
             const int64_t value = integer(epoch, "regroup", "epoch", 0, INT64_MAX);
             return made_now(blocking(c, [&] { return c.regroup(value); }));
           })
      .def("abort", [](const PyComm& held, const std::string& reason) { live(held).abort(reason); })
      .def(
          "allreduce",
          [](const PyComm& held, py::handle send, py::handle recv, ReduceOp op,
             std::optional<double> timeout, double prescale, double postscale) {
            const Communicator& c = live(held);
            auto in = view(send, Access::kRead, "allreduce's input");
            auto out = recv.is(send) ? nullptr : view(recv, Access::kWrite, "allreduce's output");
            const BufferView& o = out ? *out : *in;
            if (!out && !in->writable()) invalid("allreduce in place: the input is read-only");
            same_type(*in, o, "allreduce");
            expect_count(o, in->count(), "allreduce's output");
            const CallOptions call = call_options(timeout, prescale, postscale);
            blocking(c,
                     [&] { c.allreduce(in->data(), o.data(), in->count(), in->type(), op, call); });
          },
          py::arg("send"), py::arg("recv"), py::arg("op"), py::arg("timeout") = py::none(),
          py::arg("prescale") = 1.0, py::arg("postscale") = 1.0)
      .def(
          "_loop_allreduce",
          [](const PyComm& held, py::handle send, py::handle recv, int iterations) {
            // For bench/python_allreduce_bench.py: the C++ call alone, `iterations` times, on the
            // same buffers; seconds per call (what the Python layer adds is the difference).
            const Communicator& c = live(held);
            auto in = view(send, Access::kRead, "the input");
            auto out = view(recv, Access::kWrite, "the output");
            expect_count(*out, in->count(), "the output");
            return blocking(c, [&] {
              const auto start = std::chrono::steady_clock::now();
              for (int i = 0; i < iterations; ++i)
                c.allreduce(in->data(), out->data(), in->count(), in->type(), ReduceOp::kSum);
              return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                         .count() /
                     std::max(iterations, 1);
            });
          },
          py::arg("send"), py::arg("recv"), py::arg("iterations"))
      .def(
          "broadcast",
          [](const PyComm& held, py::handle buffer, py::handle root,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int root_rank = c_int(root, "broadcast", "root");
            auto b = view(buffer, Access::kWrite, "broadcast's buffer");
            const CallOptions call = call_options(timeout);
            blocking(c, [&] { c.broadcast(b->data(), b->count(), b->type(), root_rank, call); });
          },
          py::arg("buffer"), py::arg("root"), py::arg("timeout") = py::none())
      .def(
          "reduce",
          [](const PyComm& held, py::handle send, py::handle recv, ReduceOp op, py::handle root,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int root_rank = c_int(root, "reduce", "root");
            auto in = view(send, Access::kRead, "reduce's input");
            auto out =
                recv.is(send) ? nullptr : view(recv, Access::kWrite, "reduce's output", true);
            const bool in_place = recv.is(send);
            if (out) {
              same_type(*in, *out, "reduce");
              expect_count(*out, in->count(), "reduce's output");
            }
            void* target = in_place ? in->data() : out ? out->data() : nullptr;
            const CallOptions call = call_options(timeout);
            blocking(c, [&] {
              c.reduce(in->data(), target, in->count(), in->type(), op, root_rank, call);
            });
          },
          py::arg("send"), py::arg("recv"), py::arg("op"), py::arg("root"),
          py::arg("timeout") = py::none())
      .def(
          "allgather",
          [](const PyComm& held, py::handle send, py::handle recv, std::optional<double> timeout) {
            const Communicator& c = live(held);
            auto in = view(send, Access::kRead, "allgather's input");
            auto out = view(recv, Access::kWrite, "allgather's output");
            same_type(*in, *out, "allgather");
            expect_count(*out, in->count() * static_cast<size_t>(c.size()), "allgather's output");
            const CallOptions call = call_options(timeout);
            blocking(c,
                     [&] { c.allgather(in->data(), out->data(), in->count(), in->type(), call); });
          },
          py::arg("send"), py::arg("recv"), py::arg("timeout") = py::none())
      .def(
          "reduce_scatter",
          [](const PyComm& held, py::handle send, py::handle recv, ReduceOp op,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            auto in = view(send, Access::kRead, "reduce_scatter's input");
            auto out = view(recv, Access::kWrite, "reduce_scatter's output");
            same_type(*in, *out, "reduce_scatter");
            expect_count(*in, out->count() * static_cast<size_t>(c.size()),
                         "reduce_scatter's input");
            const CallOptions call = call_options(timeout);
            blocking(c, [&] {
              c.reduce_scatter(in->data(), out->data(), out->count(), in->type(), op, call);
            });
          },
          py::arg("send"), py::arg("recv"), py::arg("op"), py::arg("timeout") = py::none())
      .def(
          "alltoall",
          [](const PyComm& held, py::handle send, py::handle recv, std::optional<double> timeout) {
            const Communicator& c = live(held);
            auto in = view(send, Access::kRead, "alltoall's input");
            auto out = recv.is(send) ? nullptr : view(recv, Access::kWrite, "alltoall's output");
            const BufferView& o = out ? *out : *in;
            same_type(*in, o, "alltoall");
            expect_count(o, in->count(), "alltoall's output");
            const size_t size = static_cast<size_t>(c.size());
            if (in->count() % size != 0)
              invalid("alltoall: the input's " + std::to_string(in->count()) +
                      " elements do not split into " + std::to_string(size) + " equal blocks");
            const CallOptions call = call_options(timeout);
            blocking(
                c, [&] { c.alltoall(in->data(), o.data(), in->count() / size, in->type(), call); });
          },
          py::arg("send"), py::arg("recv"), py::arg("timeout") = py::none())
      .def(
          "gather",
          [](const PyComm& held, py::handle send, py::handle recv, py::handle root,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int root_rank = c_int(root, "gather", "root");
            auto in = view(send, Access::kRead, "gather's input");
            auto out = view(recv, Access::kWrite, "gather's output", true);
            if (out) {
              same_type(*in, *out, "gather");
              expect_count(*out, in->count() * static_cast<size_t>(c.size()), "gather's output");
            }
            const CallOptions call = call_options(timeout);
            blocking(c, [&] {
              c.gather(in->data(), out ? out->data() : nullptr, in->count(), in->type(), root_rank,
                       call);
            });
          },
          py::arg("send"), py::arg("recv"), py::arg("root"), py::arg("timeout") = py::none())
      .def(
          "scatter",
          [](const PyComm& held, py::handle send, py::handle recv, py::handle root,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int root_rank = c_int(root, "scatter", "root");
            auto in = view(send, Access::kRead, "scatter's input", true);
            auto out = view(recv, Access::kWrite, "scatter's output");
            if (in) {
              same_type(*in, *out, "scatter");
              expect_count(*in, out->count() * static_cast<size_t>(c.size()), "scatter's input");
            }
            const CallOptions call = call_options(timeout);
            blocking(c, [&] {
              c.scatter(in ? in->data() : nullptr, out->data(), out->count(), out->type(),
                        root_rank, call);
            });
          },
          py::arg("send"), py::arg("recv"), py::arg("root"), py::arg("timeout") = py::none())
      .def(
          "barrier",
          [](const PyComm& held, std::optional<double> timeout) {
            const Communicator& c = live(held);
            const CallOptions call = call_options(timeout);
            blocking(c, [&] { c.barrier(call); });
          },
          py::arg("timeout") = py::none())
      .def(
          "send",
          [](const PyComm& held, py::handle buffer, py::handle peer, py::handle tag,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int peer_rank = c_int(peer, "send", "peer");
            const int tag_value = c_int(tag, "send", "tag");
            auto b = view(buffer, Access::kRead, "send's buffer");
            const CallOptions call = call_options(timeout);
            blocking(c,
                     [&] { c.send(b->data(), b->count(), b->type(), peer_rank, tag_value, call); });
          },
          py::arg("buffer"), py::arg("peer"), py::arg("tag") = 0, py::arg("timeout") = py::none())
      .def(
          "recv",
          [](const PyComm& held, py::handle buffer, py::handle peer, py::handle tag,
             std::optional<double> timeout) {
            const Communicator& c = live(held);
            const int peer_rank = c_int(peer, "recv", "peer");
            const int tag_value = c_int(tag, "recv", "tag");
            auto b = view(buffer, Access::kWrite, "recv's buffer");
            const CallOptions call = call_options(timeout);
            blocking(c,
                     [&] { c.recv(b->data(), b->count(), b->type(), peer_rank, tag_value, call); });
          },
          py::arg("buffer"), py::arg("peer"), py::arg("tag") = 0, py::arg("timeout") = py::none())
      .def(
          "allreduce_async",
          [](const PyComm& held, const std::string& name, py::handle send, py::handle recv,
             ReduceOp op, double prescale, double postscale) {
            const Communicator& c = live(held);
            std::vector<std::unique_ptr<BufferView>> views;
            views.push_back(view(send, Access::kRead, "allreduce_async's input"));
            const BufferView& in = *views.back();
            if (!recv.is(send))
              views.push_back(view(recv, Access::kWrite, "allreduce_async's output"));
            const BufferView& out = *views.back();
            if (views.size() == 1 && !in.writable())
              invalid("allreduce_async in place: the input is read-only");
            same_type(in, out, "allreduce_async");
            expect_count(out, in.count(), "allreduce_async's output");
            AsyncOptions options;
            options.prescale = prescale;
            options.postscale = postscale;
            // The first asynchronous call sets the engine up, collectively: it may block.
            Handle handle = blocking(c, [&] {
              return c.allreduce_async(name, in.data(), out.data(), in.count(), in.type(), op,
                                       options);
            });
            return std::make_unique<PyHandle>(std::move(handle), std::move(views));
          },
          py::arg("name"), py::arg("send"), py::arg("recv"), py::arg("op"),
          py::arg("prescale") = 1.0, py::arg("postscale") = 1.0)
      .def(
          "broadcast_async",
          [](const PyComm& held, const std::string& name, py::handle buffer, py::handle root) {
            const Communicator& c = live(held);
            const int root_rank = c_int(root, "broadcast_async", "root");
            std::vector<std::unique_ptr<BufferView>> views;
            views.push_back(view(buffer, Access::kWrite, "broadcast_async's buffer"));
            const BufferView& b = *views.back();
            Handle handle = blocking(c, [&] {
              return c.broadcast_async(name, b.data(), b.count(), b.type(), root_rank);
            });
            return std::make_unique<PyHandle>(std::move(handle), std::move(views));
          },
          py::arg("name"), py::arg("buffer"), py::arg("root"))
      .def("join", [](const PyComm& held) {
        const Communicator& c = live(held);
        Handle handle = blocking(c, [&] { return c.join(); });
        return std::make_unique<PyHandle>(std::move(handle),
                                          std::vector<std::unique_ptr<BufferView>>{});
      });
  // tutti.elastic's State and loop: after Communicator, which they take and give.
  bind_elastic(m);
}
