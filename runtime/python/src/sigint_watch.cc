#include "sigint_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pybind11/pybind11.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tutti::python {
namespace {

// The pipe our handler writes to and the watcher reads (made once, never closed: the handler may
// run on any thread at any time).
int g_pipe[2] = {-1, -1};
// The handler ours runs after its own part (Python's), read by the handler: set before ours is
// installed, and only changed while ours is not installed.
std::atomic<void (*)(int)> g_previous_handler{nullptr};
std::atomic<void (*)(int, siginfo_t*, void*)> g_previous_action{nullptr};
std::atomic<bool> g_exiting{false};

std::mutex g_mutex;  // the calls below, and installing
std::vector<const Communicator*> g_calls;
bool g_started = false;

void on_sigint(int signal, siginfo_t* info, void* context) {
  const int saved = errno;
  const char byte = 'i';
  // Nothing else is async-signal-safe enough here: the watcher does the rest.
  [[maybe_unused]] const ssize_t written = write(g_pipe[1], &byte, 1);
  errno = saved;
  if (auto action = g_previous_action.load()) {
    action(signal, info, context);
  } else if (auto handler = g_previous_handler.load()) {
    handler(signal);
  }
}

bool ours(const struct sigaction& a) {
  return (a.sa_flags & SA_SIGINFO) != 0 && a.sa_sigaction == &on_sigint;
}

// Puts our handler in front of the one installed now, unless that is ours already, or none
// (SIG_DFL, SIG_IGN: nobody, Python included, wants to hear of SIGINT then). Python reinstalls
// its own when the program calls signal.signal(SIGINT, ...): the watcher looks again every second.
void install_if_needed() {
  struct sigaction now {};
  if (sigaction(SIGINT, nullptr, &now) != 0 || ours(now)) return;
  if ((now.sa_flags & SA_SIGINFO) == 0 && (now.sa_handler == SIG_DFL || now.sa_handler == SIG_IGN))
    return;
  if (now.sa_flags & SA_SIGINFO) {
    g_previous_handler = nullptr;
    g_previous_action = now.sa_sigaction;
  } else {
    g_previous_action = nullptr;
    g_previous_handler = now.sa_handler;
  }
  struct sigaction mine = now;
  mine.sa_flags = now.sa_flags | SA_SIGINFO;
  mine.sa_sigaction = &on_sigint;
  sigaction(SIGINT, &mine, nullptr);
}

// Whether Python's SIGINT handler is its default one, which raises KeyboardInterrupt. Takes the
// GIL: never while the interpreter exits.
bool python_interrupts() {
  if (g_exiting.load()) return false;
#if PY_VERSION_HEX >= 0x030D0000
  if (Py_IsFinalizing()) return false;
#else
  if (_Py_IsFinalizing()) return false;
#endif
  const PyGILState_STATE gil = PyGILState_Ensure();
  bool result = false;
  if (PyObject* module = PyImport_ImportModule("signal")) {
    PyObject* current = PyObject_CallMethod(module, "getsignal", "i", SIGINT);
    PyObject* fallback = PyObject_GetAttrString(module, "default_int_handler");
    result = current != nullptr && current == fallback;
    Py_XDECREF(current);
    Py_XDECREF(fallback);
    Py_DECREF(module);
  }
  if (PyErr_Occurred()) PyErr_Clear();
  PyGILState_Release(gil);
  return result;
}

void watch() {
  // SIGINT goes to the program's threads, not to this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  for (;;) {
    pollfd p{g_pipe[0], POLLIN, 0};
    const int ready = poll(&p, 1, 1000);
    bool interrupted = false;
    char bytes[64];
    if (ready > 0)
      while (read(g_pipe[0], bytes, sizeof bytes) > 0) interrupted = true;
    bool calls = false;
    {
      std::lock_guard lock(g_mutex);
      install_if_needed();
      calls = !g_calls.empty();
    }
    // The GIL before the lock (a caller registers holding the GIL, then takes the lock).
    if (!interrupted || !calls || !python_interrupts()) continue;
    std::lock_guard lock(g_mutex);
    for (const Communicator* comm : g_calls) {
      try {
        comm->abort(
            "SIGINT (Ctrl-C) interrupted this rank's Python program while it waited in a call");
      } catch (const std::exception&) {
        // A communicator that is gone or broken has nothing left to interrupt.
      }
    }
  }
}

}  // namespace

BlockingCall::BlockingCall(const Communicator& comm) : comm_(&comm) {
  {
    std::lock_guard lock(g_mutex);
    if (!g_started) {
      g_started = true;
      if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
        install_if_needed();
        std::thread(watch).detach();
      }
    }
    g_calls.push_back(comm_);
  }
  // A signal that came before the registration: its handler runs now, in place of the call.
  if (PyErr_CheckSignals() != 0) {
    std::lock_guard lock(g_mutex);
    g_calls.erase(std::find(g_calls.begin(), g_calls.end(), comm_));
    throw pybind11::error_already_set();
  }
}

BlockingCall::~BlockingCall() {
  std::lock_guard lock(g_mutex);
  if (auto it = std::find(g_calls.begin(), g_calls.end(), comm_); it != g_calls.end())
    g_calls.erase(it);
}

void BlockingCall::raise_pending_signal() {
  if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
}

void stop_sigint_watch() {
  g_exiting = true;
}

}  // namespace tutti::python
