// Ctrl-C during a blocking call. Every call releases the GIL while tutti waits for its peers, so
// Python's SIGINT handler (KeyboardInterrupt) could only run once the call returned: when the
// peer arrived, or at the collective timeout. Here a call registers its communicator for as long
// as it blocks; a SIGINT handler of ours (chained in front of Python's, which still runs) wakes a
// watcher thread through a pipe, and the watcher aborts every registered communicator (an abort
// reaches a waiting call within the transport's interrupt check, 20 ms). The call fails, the
// binding runs Python's handler with the GIL (PyErr_CheckSignals) and raises what it raised, and
// the peers fail with kAborted naming this rank. Only while Python's SIGINT handler is its
// default one (KeyboardInterrupt): a program with a handler of its own keeps its calls, and the
// handler runs when they return, as before.
#pragma once

#include <Python.h>

#include <atomic>
#include <cstdint>

#include "tutti/tutti.hpp"

namespace tutti::python {

// One blocking call on `comm`, made with the GIL held: registers it and runs the signal handlers
// pending so far (a Ctrl-C that came just before the call is not lost in it); throws
// pybind11::error_already_set when one raised. The destructor unregisters (with or without the
// GIL).
class BlockingCall {
 public:
  explicit BlockingCall(const Communicator& comm);
  ~BlockingCall();
  BlockingCall(const BlockingCall&) = delete;
  BlockingCall& operator=(const BlockingCall&) = delete;

  // After the call failed, with the GIL: when a pending signal's handler raises (KeyboardInterrupt
  // after our abort), its exception replaces the call's error: throws error_already_set.
  static void raise_pending_signal();

 private:
  void leave();

  std::atomic<uintptr_t>* slot_ = nullptr;  // null: not registered (more calls than slots)
};

// Called once when the interpreter starts to exit (atexit): the watcher stops touching Python.
void stop_sigint_watch();

}  // namespace tutti::python
