// MpiStream: a ByteStream over MPI point-to-point between two ranks of a duplicated communicator;
// one of the few files that include <mpi.h>.
//
// MPI moves messages, a ByteStream bytes. The FramedChannel above hands write_some a frame's header
// and payload as separate pieces and asks read_some for exactly the rest of a header or a payload.
// A large piece travels straight from the caller's buffer, cut into messages of at most
// TUTTI_MPI_MESSAGE_BYTES (default 60 KiB: below Open MPI's TCP eager limit, so no message waits a
// rendezvous round trip; measured in docs/PERFORMANCE.md), and lands straight in the posted
// receive's buffer; small pieces in a row
// (headers, small payloads) are copied into one message, so a small frame costs one MPI message,
// not two. The receiver takes a message directly when it fits the piece asked for (its bytes are
// the stream's next ones either way), else through a staging buffer.
//
// Sends are MPI_Isend, reported written once MPI_Test says they completed (until then the frame's
// bytes stay with the FramedChannel, and committed_bytes() tells it they can no longer be taken
// back). A receive starts when MPI_Improbe matches the next message, whose sender has posted it, so
// MPI_Imrecv of it completes as fast as MPI moves the bytes; it is driven to completion right
// there. Non-overtaking order on one (communicator, source, tag) keeps the stream in order.
#include <algorithm>
#include <climits>
#include <cstring>
#include <deque>
#include <mutex>

// The C API only: Open MPI's deprecated C++ bindings would need libmpi_cxx.
#define OMPI_SKIP_MPICXX 1
#include <mpi.h>

#include "bootstrap/mpi_session.hpp"
#include "core/deadline.hpp"
#include "core/error.hpp"
#include "core/log.hpp"
#include "transport/byte_stream.hpp"
#include "transport/framed_channel.hpp"
#include "transport/mpi_links.hpp"

namespace tutti::transport {
namespace {

// The one MPI tag of every stream: the frames carry tutti's 64-bit tags (class, context, call,
// step), which no MPI_TAG_UB (at least 32767) can hold, so matching them stays with FramedChannel.
constexpr int kStreamTag = 1;
constexpr size_t kMaxMessage = size_t{1} << 30;
// Pieces below this are copied into a shared message of at most kMaxCoalesced bytes (Open MPI's
// TCP eager limit is 64 KiB: one message, no rendezvous).
constexpr size_t kCoalesceBelow = 16 << 10;
constexpr size_t kMaxCoalesced = 64 << 10;
// Sends in flight per peer: enough for a pipelined ring's window of segments.
constexpr size_t kMaxInFlight = 64;
// How long the bytes of a matched message may take to arrive: its sender posted it, so only a
// stalled or dead peer process (which mpirun normally turns into the end of the job) gets here.
constexpr auto kReceiveBudget = std::chrono::seconds(300);

// tutti calls MPI from whichever thread drives a communicator, one call at a time.
std::mutex g_mpi_calls;

std::string mpi_error_text(int rc) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(rc, text, &len) != MPI_SUCCESS) return fmt::format("MPI error {}", rc);
  return std::string(text, static_cast<size_t>(len));
}

// The fabric's own communicator: a duplicate of the session's, freed with the last link.
class MpiFabricComm {
 public:
  explicit MpiFabricComm(std::shared_ptr<bootstrap::MpiSession> session)
      : session_(std::move(session)) {
    const MPI_Comm parent = *static_cast<const MPI_Comm*>(session_->communicator());
    std::lock_guard lock(g_mpi_calls);
    int rc = MPI_Comm_dup(parent, &comm_);
    if (rc != MPI_SUCCESS)
      throw make_error(ErrorCode::kSystem, "rank {}: MPI_Comm_dup for the MPI transport failed: {}",
                       session_->rank(), mpi_error_text(rc));
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  }
  ~MpiFabricComm() {
    std::lock_guard lock(g_mpi_calls);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
  MpiFabricComm(const MpiFabricComm&) = delete;
  MpiFabricComm& operator=(const MpiFabricComm&) = delete;

  MPI_Comm get() const { return comm_; }
  const bootstrap::MpiSession& session() const { return *session_; }

 private:
  std::shared_ptr<bootstrap::MpiSession> session_;  // MPI stays initialized while links exist
  MPI_Comm comm_ = MPI_COMM_NULL;
};

class MpiStream final : public ByteStream {
 public:
  // `max_message`: payloads are cut into MPI messages of at most this many bytes.
  MpiStream(std::shared_ptr<MpiFabricComm> comm, int self, int peer, size_t max_message)
      : comm_(std::move(comm)), self_(self), peer_(peer), max_message_(max_message) {}

  ~MpiStream() override {
    // Sends still in flight belong to a failed or abandoned exchange: MPI finishes them on its own.
    std::lock_guard lock(g_mpi_calls);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    for (auto& send : sends_) MPI_Request_free(&send.request);
  }

  size_t write_some(ConstPieces pieces) override {
    std::lock_guard lock(g_mpi_calls);
    // Bytes already in flight are the first ones of `pieces`; post what follows them.
    size_t skip = in_flight_bytes_;
    std::vector<std::byte> small;  // small pieces in a row, sent as one message
    for (const auto& piece : pieces) {
      if (sends_.size() >= kMaxInFlight) break;
      if (skip >= piece.size()) {
        skip -= piece.size();
        continue;
      }
      const std::span<const std::byte> rest = piece.subspan(skip);
      skip = 0;
      if (rest.size() < kCoalesceBelow) {
        if (small.size() + rest.size() > kMaxCoalesced) post_owned(small);
        small.insert(small.end(), rest.begin(), rest.end());
        continue;
      }
      post_owned(small);
      for (size_t at = 0; at < rest.size() && sends_.size() < kMaxInFlight;) {
        const size_t bytes = std::min(rest.size() - at, max_message_);
        post(rest.data() + at, bytes, {});
        at += bytes;
      }
    }
    post_owned(small);
    // Report the sends that completed, in order.
    size_t done = 0;
    while (!sends_.empty()) {
      int flag = 0;
      check(MPI_Test(&sends_.front().request, &flag, MPI_STATUS_IGNORE), "MPI_Test of a send");
      if (!flag) break;
      done += sends_.front().bytes;
      in_flight_bytes_ -= sends_.front().bytes;
      sends_.pop_front();
    }
    return done;
  }

  size_t read_some(Pieces pieces) override {
    if (staged_at_ < staged_.size()) return copy_staged(pieces);
    if (pieces.empty() || pieces[0].empty()) return 0;
    std::unique_lock lock(g_mpi_calls);
    int flag = 0;
    MPI_Message message = MPI_MESSAGE_NULL;
    MPI_Status status;
    check(MPI_Improbe(peer_, kStreamTag, comm_->get(), &flag, &message, &status), "MPI_Improbe");
    if (!flag) return 0;
    int count = 0;
    check(MPI_Get_count(&status, MPI_BYTE, &count), "MPI_Get_count");
    const auto bytes = static_cast<size_t>(count);
    const bool direct = bytes <= pieces[0].size();
    if (!direct) {
      staged_.resize(bytes);
      staged_at_ = 0;
    }
    std::byte* target = direct ? pieces[0].data() : staged_.data();
    MPI_Request request = MPI_REQUEST_NULL;
    check(MPI_Imrecv(target, count, MPI_BYTE, &message, &request), "MPI_Imrecv");
    const Deadline deadline = Deadline::after(kReceiveBudget);
    for (;;) {
      check(MPI_Test(&request, &flag, MPI_STATUS_IGNORE), "MPI_Test of a receive");
      if (flag) break;
      if (deadline.expired())
        throw make_error(ErrorCode::kPeerFailure,
                         "rank {}: {} bytes from rank {} over MPI did not arrive within {} s of "
                         "being matched; is rank {} alive?",
                         self_, bytes, peer_, kReceiveBudget.count(), peer_);
      // Let another thread's communicator use MPI between tests.
      lock.unlock();
      lock.lock();
    }
    lock.unlock();
    return direct ? bytes : copy_staged(pieces);
  }

  size_t committed_bytes() const override { return in_flight_bytes_; }
  int wait_fd() const override { return -1; }
  std::string describe() const override {
    return fmt::format("rank {} (mpi, {})", peer_, comm_->session().library());
  }
  TransportKind kind() const override { return TransportKind::kMpi; }

 private:
  struct Send {
    MPI_Request request = MPI_REQUEST_NULL;
    size_t bytes = 0;
    std::vector<std::byte> owned;  // the bytes of coalesced small pieces
  };

  // One MPI_Isend of `bytes` at `data`, or of `owned` when it is not empty.
  void post(const std::byte* data, size_t bytes, std::vector<std::byte> owned) {
    Send& send = sends_.emplace_back();
    send.bytes = bytes;
    send.owned = std::move(owned);
    if (!send.owned.empty()) data = send.owned.data();
    // const_cast: Open MPI 4 declares the buffer const only with MPI-3 const support enabled.
    check(MPI_Isend(const_cast<std::byte*>(data), static_cast<int>(bytes), MPI_BYTE, peer_,
                    kStreamTag, comm_->get(), &send.request),
          "MPI_Isend");
    in_flight_bytes_ += bytes;
  }
  void post_owned(std::vector<std::byte>& small) {
    if (small.empty()) return;
    const size_t bytes = small.size();
    post(nullptr, bytes, std::move(small));
    small.clear();
  }

  void check(int rc, std::string_view what) const {
    if (rc == MPI_SUCCESS) return;
    throw make_error(ErrorCode::kPeerFailure, "rank {}: {} with rank {} failed: {}", self_, what,
                     peer_, mpi_error_text(rc));
  }

  size_t copy_staged(Pieces pieces) {
    size_t copied = 0;
    for (const auto& piece : pieces) {
      const size_t n = std::min(piece.size(), staged_.size() - staged_at_);
      if (n > 0) std::memcpy(piece.data(), staged_.data() + staged_at_, n);
      staged_at_ += n;
      copied += n;
      if (staged_at_ == staged_.size()) break;
    }
    if (staged_at_ == staged_.size()) {
      staged_.clear();
      staged_at_ = 0;
    }
    return copied;
  }

  std::shared_ptr<MpiFabricComm> comm_;
  int self_, peer_;
  size_t max_message_;
  std::deque<Send> sends_;
  size_t in_flight_bytes_ = 0;
  std::vector<std::byte> staged_;
  size_t staged_at_ = 0;
};

}  // namespace

std::vector<std::unique_ptr<Link>> connect_mpi_links(const MeshConfig& config) {
  if (!config.mpi)
    throw make_error(ErrorCode::kConfig,
                     "rank {}: TUTTI_TRANSPORT=mpi needs the MPI bootstrap: start the job with "
                     "Open MPI's mpirun (or create the communicator from an MPI_Comm, "
                     "tutti/tutti_mpi.h)",
                     config.rank);
  const bootstrap::MpiSession& session = *config.mpi;
  if (session.rank() != config.rank || session.size() != config.size)
    throw make_error(ErrorCode::kConfig,
                     "rank {} of {}: the MPI communicator has this process as rank {} of {}; the "
                     "MPI transport needs the same numbering",
                     config.rank, config.size, session.rank(), session.size());
  session.require_transport_thread_level(config.rank);
  auto comm = std::make_shared<MpiFabricComm>(config.mpi);
  {
    std::lock_guard lock(g_mpi_calls);
    int* tag_ub = nullptr;
    int found = 0;
    MPI_Comm_get_attr(comm->get(), MPI_TAG_UB, &tag_ub, &found);
    if (!found || tag_ub == nullptr || *tag_ub < kStreamTag)
      throw make_error(ErrorCode::kConfig, "rank {}: MPI ({}) offers no tag {} (MPI_TAG_UB {})",
                       config.rank, session.library(), kStreamTag, found && tag_ub ? *tag_ub : -1);
  }
  std::vector<std::unique_ptr<Link>> links(config.size);
  for (int peer = 0; peer < config.size; ++peer) {
    if (peer == config.rank) continue;
    links[peer] = std::make_unique<FramedChannel>(
        peer, std::make_unique<MpiStream>(
                  comm, config.rank, peer,
                  std::clamp<size_t>(config.options.mpi_message_bytes, 1, kMaxMessage)));
  }
  log::debug("rank {}: {} MPI links through {}", config.rank, config.size - 1, session.library());
  return links;
}

}  // namespace tutti::transport
