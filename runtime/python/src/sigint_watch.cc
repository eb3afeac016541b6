#include "sigint_watch.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pybind11/pybind11.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tutti::python {
namespace {

// The pipe our handler writes to and the watcher reads (made once, never closed: the handler may
// run on any thread at any time).
int g_pipe[2] = {-1, -1};
// The process that made them: a child forked later (multiprocessing) inherits our handler and the
// pipe but not the watcher, and its SIGINT is not the parent's.
std::atomic<pid_t> g_watched_pid{0};
// The handler ours runs after its own part (Python's), read by the handler: set before ours is
// installed, and only changed while ours is not installed.
std::atomic<void (*)(int)> g_previous_handler{nullptr};
std::atomic<void (*)(int, siginfo_t*, void*)> g_previous_action{nullptr};
std::atomic<bool> g_exiting{false};

// The calls under way, one slot each: 0 when free, the communicator's address while its call
// blocks, with the low bit set while the watcher aborts it (the caller then waits before it
// leaves, so the communicator outlives the abort). Compare-and-swaps, not a lock: a call pays two
// (tens of nanoseconds, on the fast path's budget of well under a microsecond).
constexpr size_t kSlots = 64;  // calls at once beyond these are not interrupted
std::atomic<uintptr_t> g_slots[kSlots];
constexpr uintptr_t kAborting = 1;

std::once_flag g_started;
std::mutex g_install_mutex;

void on_sigint(int signal, siginfo_t* info, void* context) {
  const int saved = errno;
  const char byte = 'i';
  // Nothing else is async-signal-safe enough here: the watcher does the rest.
  if (getpid() == g_watched_pid.load()) {
    [[maybe_unused]] const ssize_t written = write(g_pipe[1], &byte, 1);
  }
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

bool any_call() {
  for (const auto& slot : g_slots)
    if (slot.load() != 0) return true;
  return false;
}

void abort_calls() {
  for (auto& slot : g_slots) {
    uintptr_t call = slot.load();
    if (call == 0 || (call & kAborting) != 0 ||
        !slot.compare_exchange_strong(call, call | kAborting))
      continue;
    try {
      reinterpret_cast<const Communicator*>(call)->abort(
          "SIGINT (Ctrl-C) interrupted this rank's Python program while it waited in a call");
    } catch (const std::exception&) {
      // A communicator that is gone or broken has nothing left to interrupt.
    }
    slot.store(call);
  }
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
    {
      std::lock_guard lock(g_install_mutex);
      install_if_needed();
    }
    if (interrupted && any_call() && python_interrupts()) abort_calls();
  }
}

void start() {
  if (pipe2(g_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return;  // then Ctrl-C waits, as before
  g_watched_pid = getpid();
  {
    std::lock_guard lock(g_install_mutex);
    install_if_needed();
  }
  std::thread(watch).detach();
}

}  // namespace

BlockingCall::BlockingCall(const Communicator& comm) {
  std::call_once(g_started, start);
  const auto call = reinterpret_cast<uintptr_t>(&comm);
  for (auto& slot : g_slots) {
    uintptr_t free = 0;
    if (slot.compare_exchange_strong(free, call)) {
      slot_ = &slot;
      break;
    }
  }
  // A signal that came before the registration: its handler runs now, in place of the call.
  if (PyErr_CheckSignals() != 0) {
    leave();
    throw pybind11::error_already_set();
  }
}

BlockingCall::~BlockingCall() {
  leave();
}

void BlockingCall::leave() {
  if (slot_ == nullptr) return;
  for (uintptr_t call = slot_->load(); !slot_->compare_exchange_weak(call, 0);) {
    if ((call & kAborting) != 0) {
      std::this_thread::yield();  // the watcher is aborting this call's communicator right now
      call &= ~kAborting;
    }
  }
  slot_ = nullptr;
}

void BlockingCall::raise_pending_signal() {
  if (PyErr_CheckSignals() != 0) throw pybind11::error_already_set();
}

void stop_sigint_watch() {
  g_exiting = true;
}

}  // namespace tutti::python
