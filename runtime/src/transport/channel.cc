#include "transport/channel.hpp"

#include "core/env.hpp"
#include "core/error.hpp"

namespace tutti::transport {

std::string_view kind_name(TransportKind kind) {
  return env::choice_name("TUTTI_TRANSPORT", static_cast<int>(kind));
}

Request Channel::isend_pieces(Tag tag, ConstPieces) {
  throw make_error(ErrorCode::kInternal,
                   "a gathered send (tag {:#x}) to {}: this {} channel takes no pieces; pack "
                   "them into one buffer",
                   tag, describe(), kind_name(kind()));
}

Request Channel::irecv_pieces(Tag tag, Pieces) {
  throw make_error(ErrorCode::kInternal,
                   "a scattered receive (tag {:#x}) from {}: this {} channel takes no pieces; "
                   "receive into one buffer",
                   tag, describe(), kind_name(kind()));
}

}  // namespace tutti::transport
