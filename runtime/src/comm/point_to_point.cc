// Point-to-point messages on a communicator: user tags live in a tag class of their own
// (transport/tag.hpp), so they never meet a collective's or the transport's messages.
#include "comm/communicator.hpp"
#include "core/error.hpp"

namespace tutti::comm {

Request Communicator::post(bool is_send, void* buf, size_t count, DataType type, int peer,
                           int tag) {
  const char* verb = is_send ? "send" : "recv";
  if (peer < 0 || peer >= size_ || peer == rank_)
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: peer {} is not another rank of this communicator (size {})",
                     verb, rank_, peer, size_);
  if (tag < 0)
    throw make_error(ErrorCode::kInvalidArgument,
                     "{} on rank {}: tag {} is negative; user tags are 0 .. 2^31-1", verb, rank_,
                     tag);
  if (!valid(type))
    throw make_error(ErrorCode::kInvalidArgument, "{} on rank {}: invalid dtype {}", verb, rank_,
                     static_cast<int>(type));
  const size_t element = element_size(type);
  if (count > SIZE_MAX / element)
    throw make_error(ErrorCode::kInvalidArgument, "{} on rank {}: {} elements overflow", verb,
                     rank_, count);
  if (count > 0 && buf == nullptr)
    throw make_error(ErrorCode::kInvalidArgument, "{} on rank {}: null buffer", verb, rank_);
  // Device buffers would need both sides on the device (NCCL send/recv), which one rank cannot
  // check alone: a device send meeting a host receive would hang. Point-to-point stays on the host.
  refuse_device(verb, {buf});
  const size_t bytes = count * element;
  Request request;
  request.comm_ = shared_from_this();
  request.what_ = fmt::format("{} of {} bytes {} rank {} with tag {}", verb, bytes,
                              is_send ? "to" : "from", peer, tag);
  guarded(verb, sequence_, Deadline::after(options_.timeout), [&] {
    transport::Channel& channel = transport_->channel(peer);
    auto* data = static_cast<std::byte*>(buf);
    request.request_ = is_send ? channel.isend(transport::p2p_tag(tag), {data, bytes})
                               : channel.irecv(transport::p2p_tag(tag), {data, bytes});
  });
  return request;
}

Request Communicator::isend(const void* buf, size_t count, DataType type, int peer, int tag) {
  // const_cast: one post() for both directions; a send never writes through the pointer.
  return post(true, const_cast<void*>(buf), count, type, peer, tag);
}

Request Communicator::irecv(void* buf, size_t count, DataType type, int peer, int tag) {
  return post(false, buf, count, type, peer, tag);
}

void Communicator::send(const void* buf, size_t count, DataType type, int peer, int tag,
                        const CallOptions& call) {
  isend(buf, count, type, peer, tag).wait(call.timeout);
}

void Communicator::recv(void* buf, size_t count, DataType type, int peer, int tag,
                        const CallOptions& call) {
  irecv(buf, count, type, peer, tag).wait(call.timeout);
}

bool Request::test() {
  if (!comm_) return true;
  if (request_.complete()) return true;
  bool done = false;
  comm_->guarded("test", comm_->sequence_, Deadline::after(comm_->options_.timeout), [&] {
    comm_->transport_->progress_all();
    done = request_.complete();
  });
  return done;
}

void Request::wait(std::optional<std::chrono::milliseconds> timeout) {
  if (!comm_ || request_.complete()) return;
  const Deadline deadline = Deadline::after(timeout.value_or(comm_->options_.timeout));
  comm_->guarded("wait", comm_->sequence_, deadline,
                 [&] { comm_->transport_->wait(std::span(&request_, 1), deadline, what_); });
}

}  // namespace tutti::comm
