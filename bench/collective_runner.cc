#include "collective_runner.hpp"

#include <algorithm>
#include <cstring>

#include "bench_data.hpp"

namespace tutti::bench {

Layout layout_for(Collective c, size_t count, int nranks) {
  const auto n = static_cast<size_t>(nranks);
  Layout l;
  switch (c) {
    case Collective::kAllreduce:
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      l.send_count = l.recv_count = l.param_count = count;
      break;
    case Collective::kAllgather:
    case Collective::kGather:
      l.send_count = count / n;
      l.recv_count = (count / n) * n;
      l.param_count = count / n;
      l.send_inplace_offset = count / n;
      break;
    case Collective::kReduceScatter:
    case Collective::kScatter:
      l.send_count = (count / n) * n;
      l.recv_count = count / n;
      l.param_count = count / n;
      l.recv_inplace_offset = count / n;
      break;
    case Collective::kAlltoall:
      l.send_count = l.recv_count = (count / n) * n;
      l.param_count = count / n;
      break;
  }
  return l;
}

Bandwidth bandwidth(Collective c, size_t param_count, DataType t, double seconds, int nranks) {
  const double n = nranks;
  double bytes = static_cast<double>(param_count * element_size(t));
  double factor = 1;
  switch (c) {
    case Collective::kAllreduce:
      factor = 2 * (n - 1) / n;
      break;
    case Collective::kAllgather:
    case Collective::kReduceScatter:
    case Collective::kGather:
    case Collective::kScatter:
    case Collective::kAlltoall:
      bytes *= n;
      factor = (n - 1) / n;
      break;
    case Collective::kBroadcast:
    case Collective::kReduce:
    case Collective::kSendRecv:
      factor = 1;
      break;
  }
  if (seconds <= 0) return {};
  double alg = bytes / 1.0e9 / seconds;
  return {alg, alg * factor};
}

std::byte* CollectiveRunner::send_ptr(const RunSpec& s) const {
  const size_t es = element_size(s.type);
  // sendrecv has no in-place form (a buffer cannot be sent and received into at once).
  if (!s.in_place || s.collective == Collective::kSendRecv) return send_.data();
  return recv_.data() + s.layout.send_inplace_offset * es * static_cast<size_t>(comm_.rank());
}

std::byte* CollectiveRunner::recv_ptr(const RunSpec& s) const {
  const size_t es = element_size(s.type);
  return recv_.data() +
         (s.in_place ? s.layout.recv_inplace_offset * es * static_cast<size_t>(comm_.rank()) : 0);
}

std::byte* CollectiveRunner::call_send_ptr(const RunSpec& s) const {
  if (device_ == nullptr) return send_ptr(s);
  const std::byte* host = send_ptr(s);
  if (host >= recv_.data() && host < recv_.data() + recv_.size())
    return device_->recv() + (host - recv_.data());
  return device_->send() + (host - send_.data());
}

std::byte* CollectiveRunner::call_recv_ptr(const RunSpec& s) const {
  if (device_ == nullptr) return recv_ptr(s);
  return device_->recv() + (recv_ptr(s) - recv_.data());
}

namespace {
size_t touched_bytes(const RunSpec& s) {
  return std::max(s.layout.recv_count, s.layout.send_count) * element_size(s.type);
}
}  // namespace

void CollectiveRunner::fill(const RunSpec& s) {
  fill_host(s);
  if (device_ != nullptr) device_->upload(send_, recv_, touched_bytes(s));
}

uint64_t CollectiveRunner::count_wrong(const RunSpec& s) {
  if (device_ != nullptr) device_->download_recv(recv_, touched_bytes(s));
  return count_wrong_host(s);
}

void CollectiveRunner::fill_host(const RunSpec& s) {
  const int rank = comm_.rank();
  const int n = comm_.size();
  const size_t es = element_size(s.type);
  // Everything that is to be received starts as poison; inputs are written over it.
  std::memset(recv_.data(), kPoisonByte, std::max(s.layout.recv_count, s.layout.send_count) * es);
  std::byte* in = send_ptr(s);
  switch (s.collective) {
    case Collective::kAllreduce:
    case Collective::kReduceScatter:
    case Collective::kReduce:
      for (size_t i = 0; i < s.layout.send_count; ++i)
        set_value(s.type, in, i, reduce_input(s.type, s.op, rank, n, i));
      break;
    case Collective::kAllgather:
    case Collective::kGather:
    case Collective::kSendRecv:
      for (size_t i = 0; i < s.layout.send_count; ++i)
        set_value(s.type, in, i, gather_input(rank, i));
      break;
    case Collective::kScatter:
      // The root's send holds every rank's block: block r element i is gather_input(r, i).
      if (rank == s.root)
        for (size_t i = 0; i < s.layout.send_count; ++i)
          set_value(
              s.type, in, i,
              gather_input(static_cast<int>(i / s.layout.param_count), i % s.layout.param_count));
      break;
    case Collective::kAlltoall:
      // Block q, element i, goes to rank q: gather_input(rank * n + q, i).
      for (size_t i = 0; i < s.layout.send_count; ++i)
        set_value(s.type, in, i,
                  gather_input(rank * n + static_cast<int>(i / s.layout.param_count),
                               i % s.layout.param_count));
      break;
    case Collective::kBroadcast:
      // The API broadcasts in place: the root's buffer is the source.
      if (rank == s.root)
        for (size_t i = 0; i < s.layout.param_count; ++i)
          set_value(s.type, recv_.data(), i, broadcast_input(s.root, i));
      break;
  }
}

void CollectiveRunner::run(const RunSpec& s) {
  issue(s);
  if (device_ != nullptr) device_->wait_for_calls();
}

void CollectiveRunner::issue(const RunSpec& s) {
  const size_t count = s.layout.param_count;
  CallOptions call;
  if (device_ != nullptr) call.stream = device_->stream();
  switch (s.collective) {
    case Collective::kAllreduce:
      comm_.allreduce(call_send_ptr(s), call_recv_ptr(s), count, s.type, s.op, call);
      return;
    case Collective::kAllgather:
      comm_.allgather(call_send_ptr(s), call_recv_ptr(s), count, s.type, call);
      return;
    case Collective::kBroadcast:
      comm_.broadcast(device_ != nullptr ? device_->recv() : recv_.data(), count, s.type, s.root,
                      call);
      return;
    case Collective::kReduceScatter:
      comm_.reduce_scatter(call_send_ptr(s), call_recv_ptr(s), count, s.type, s.op, call);
      return;
    case Collective::kReduce:
      comm_.reduce(call_send_ptr(s), call_recv_ptr(s), count, s.type, s.op, s.root);
      return;
    case Collective::kGather:
      comm_.gather(call_send_ptr(s), call_recv_ptr(s), count, s.type, s.root);
      return;
    case Collective::kScatter:
      comm_.scatter(call_send_ptr(s), call_recv_ptr(s), count, s.type, s.root);
      return;
    case Collective::kAlltoall:
      comm_.alltoall(call_send_ptr(s), call_recv_ptr(s), count, s.type);
      return;
    case Collective::kSendRecv: {
      const int n = comm_.size();
      if (n == 1) {
        std::memcpy(call_recv_ptr(s), call_send_ptr(s), count * element_size(s.type));
        return;
      }
      Request in = comm_.irecv(call_recv_ptr(s), count, s.type, (comm_.rank() + n - 1) % n, 0);
      Request out = comm_.isend(call_send_ptr(s), count, s.type, (comm_.rank() + 1) % n, 0);
      in.wait();
      out.wait();
      return;
    }
  }
}

uint64_t CollectiveRunner::count_wrong_host(const RunSpec& s) const {
  const int rank = comm_.rank();
  const int n = comm_.size();
  const std::byte* out = recv_ptr(s);
  uint64_t wrong = 0;
  auto expect = [&](size_t i, double want) {
    // The value as the type holds it (bool keeps only non-zero, narrow integers wrap), as the
    // inputs were stored.
    want = values::as_type(s.type, want);
    double got = get_value(s.type, out, i);
    // NaN never equals: poison that decodes to NaN is wrong, as it should be.
    if (!(got == want)) ++wrong;
  };
  switch (s.collective) {
    case Collective::kAllreduce:
      for (size_t i = 0; i < s.layout.recv_count; ++i)
        expect(i, reduce_expected(s.type, s.op, n, i));
      break;
    case Collective::kReduceScatter: {
      const size_t base = static_cast<size_t>(rank) * s.layout.param_count;
      for (size_t i = 0; i < s.layout.recv_count; ++i)
        expect(i, reduce_expected(s.type, s.op, n, base + i));
      break;
    }
    case Collective::kAllgather:
      for (int r = 0; r < n; ++r)
        for (size_t i = 0; i < s.layout.param_count; ++i)
          expect(static_cast<size_t>(r) * s.layout.param_count + i, gather_input(r, i));
      break;
    case Collective::kBroadcast:
      for (size_t i = 0; i < s.layout.param_count; ++i) expect(i, broadcast_input(s.root, i));
      break;
    case Collective::kReduce:
      if (rank == s.root)
        for (size_t i = 0; i < s.layout.recv_count; ++i)
          expect(i, reduce_expected(s.type, s.op, n, i));
      break;
    case Collective::kGather:
      if (rank == s.root)
        for (int r = 0; r < n; ++r)
          for (size_t i = 0; i < s.layout.param_count; ++i)
            expect(static_cast<size_t>(r) * s.layout.param_count + i, gather_input(r, i));
      break;
    case Collective::kScatter:
      for (size_t i = 0; i < s.layout.recv_count; ++i) expect(i, gather_input(rank, i));
      break;
    case Collective::kAlltoall:
      // Block p came from rank p: gather_input(p * n + rank, i).
      for (size_t k = 0; k < s.layout.recv_count; ++k)
        expect(k, gather_input(static_cast<int>(k / s.layout.param_count) * n + rank,
                               k % s.layout.param_count));
      break;
    case Collective::kSendRecv:
      for (size_t i = 0; i < s.layout.recv_count; ++i)
        expect(i, gather_input((rank + n - 1) % n, i));
      break;
  }
  return wrong;
}

}  // namespace tutti::bench
