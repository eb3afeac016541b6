// Link: this rank's connection to one peer process, shared by every communicator of the process
// that includes that peer (fabric.hpp). Each communicator is a context (transport/tag.hpp): its
// messages carry its context id in their tags, its calls are checked against its own call
// signature, and a mismatch or an abort notice fails that context only. What breaks the connection
// itself (the peer died, closed, or sent garbage) fails every context.
//
// A Link is also a Channel for context 0, so a link can be used directly (as the transport's unit
// tests do) without a communicator around it.
#pragma once

#include <string>

#include "transport/channel.hpp"
#include "tutti/error.hpp"

namespace tutti::transport {

class Link : public Channel {
 public:
  // Moves whatever bytes can move, for every context; throws only what fails the whole link.
  // `caller` is the context whose thread is progressing: only its call may be read here. A frame
  // of another context (whose thread may be changing its call right now) is delivered or stashed
  // unchecked, and its check waits for that context's thread (verify_context).
  virtual bool progress_link(ContextId caller) = 0;
  // Whether the connection is over: it failed, or the peer closed it while nothing was pending
  // (which progress_link does not throw for: an idle close is how a finished peer leaves). A
  // process that died closes its connections, so this is how a peer on another host is seen gone
  // between calls.
  virtual bool ended() const = 0;
  // Runs the checks that other threads' progress left for `context` (from its own thread); a
  // disagreement fails the context. Cheap to skip when checks_pending() is false.
  virtual void verify_context(ContextId context) = 0;
  // Whether any context has checks waiting (read without the link's lock; a thread that saw an
  // operation complete sees the checks its delivery left).
  virtual bool checks_pending() const = 0;
  // What failed `context` (a mismatch on its messages, an abort notice for it), or null.
  virtual const Error* context_failure(ContextId context) const = 0;
  // Sends or receives of `context` are posted and not complete.
  virtual bool busy_in(ContextId context) const = 0;
  // Anything of any context is posted and not complete.
  virtual bool busy_any() const = 0;
  // Where `context` keeps its current call; `self` and `peer` are this rank's and the peer's
  // numbers in that context (for error messages).
  virtual void bind_call_in(ContextId context, int self, int peer,
                            const CallSignature* current) = 0;
  // The communicator of `context` is gone: its posted operations and early messages are dropped,
  // and what still arrives for it is read and discarded.
  virtual void release_context(ContextId context) = 0;
  virtual void check_early_messages_in(ContextId context) = 0;
  virtual void announce_call_in(ContextId context) = 0;
  // Tells the peer that this rank's `context` is failing (best effort; never blocks for long).
  // The peer's context fails with `code` (kMismatch, kAborted, kTimeout) or else kPeerFailure.
  virtual void send_abort_in(ContextId context, ErrorCode code,
                             const std::string& reason) noexcept = 0;

  // Channel, as context 0.
  bool progress() final { return progress_in(0); }

  // progress_link, then the context's own failure. When the link fails too (a peer that sent an
  // abort notice and exited), the notice's reason is the one that tells the user why.
  bool progress_in(ContextId context) {
    bool moved = false;
    try {
      moved = progress_link(context);
    } catch (const Error&) {
      if (const Error* failure = context_failure(context)) throw *failure;
      throw;
    }
    if (const Error* failure = context_failure(context)) throw *failure;
    return moved;
  }
  bool busy() const final { return busy_in(0); }
  void bind_call(int self, const CallSignature* current) final {
    bind_call_in(0, self, peer(), current);
  }
  void check_early_messages() final { check_early_messages_in(0); }
  void announce_call() final { announce_call_in(0); }
  void send_abort(ErrorCode code, const std::string& reason) noexcept final {
    send_abort_in(0, code, reason);
  }
};

}  // namespace tutti::transport
