// The one tag layout of every message on a link. Many communicators share the connections of a
// process (see fabric.hpp), so a tag names the communicator (its context id) as well as the
// message within it, and user point-to-point tags live in a class of their own where no
// collective or control message can meet them:
//
//   bits 63..62  class    0 collective, 1 point-to-point, 3 transport control (2 unused)
//   bits 61..42  context  the communicator's context id (20 bits; 0 is a world's)
//   bits 41..0   what, by class:
//     collective  bit 41: a phase of a composite collective (hierarchy.hpp), then 17 bits of the
//                 call's sequence number (it wraps: only neighbouring calls are ever in flight, and
//                 a stale message is caught by the call signature in its header), then a 24-bit
//                 step within the call
//     p2p         the user's tag, 0..2^31-1
//     control     the control kind (abort notice, call announcement)
//
// Collectives build context-free tags (make_tag); the communicator's channel views add the context
// (with_context), so the algorithms never know which communicator they run on.
#pragma once

#include <cstdint>

namespace tutti::transport {

using Tag = uint64_t;
using ContextId = uint32_t;

enum class TagClass : uint8_t { kCollective = 0, kPointToPoint = 1, kControl = 3 };

inline constexpr int kContextBits = 20;
inline constexpr ContextId kMaxContextId = (ContextId{1} << kContextBits) - 1;
inline constexpr int kContextShift = 42;
inline constexpr Tag kContextMask = Tag{kMaxContextId} << kContextShift;
inline constexpr int kClassShift = 62;
inline constexpr Tag kWhatMask = (Tag{1} << kContextShift) - 1;
inline constexpr uint64_t kPhaseFlag = uint64_t{1} << 63;  // in a sequence: see phase_sequence
inline constexpr int kSequenceBits = 17;
inline constexpr int kStepBits = 24;
inline constexpr int32_t kMaxUserTag = INT32_MAX;

constexpr TagClass tag_class(Tag tag) {
  return static_cast<TagClass>(tag >> kClassShift);
}
constexpr ContextId tag_context(Tag tag) {
  return static_cast<ContextId>((tag & kContextMask) >> kContextShift);
}
constexpr Tag with_context(Tag tag, ContextId context) {
  return (tag & ~kContextMask) | (Tag{context} << kContextShift);
}

// A collective call's sequence number and a step within it make a tag, so two calls in flight
// never match each other's messages. A sequence with kPhaseFlag set (a phase of a composite
// collective) lands in a half of the sequence space plain calls never use.
constexpr Tag make_tag(uint64_t sequence, uint32_t step) {
  const Tag phase = (sequence & kPhaseFlag) ? Tag{1} << kSequenceBits : 0;
  const Tag seq = phase | (sequence & ((Tag{1} << kSequenceBits) - 1));
  return (seq << kStepBits) | (step & ((Tag{1} << kStepBits) - 1));
}
constexpr uint32_t tag_step(Tag tag) {
  return static_cast<uint32_t>(tag & 0xffffff);
}
// The call number a collective tag holds (the low 17 bits of it), for messages.
constexpr uint32_t tag_sequence(Tag tag) {
  return static_cast<uint32_t>((tag >> kStepBits) & ((Tag{1} << kSequenceBits) - 1));
}

constexpr Tag p2p_tag(int32_t user_tag) {
  return (Tag{static_cast<uint8_t>(TagClass::kPointToPoint)} << kClassShift) |
         static_cast<Tag>(user_tag);
}
constexpr int32_t tag_user(Tag tag) {
  return static_cast<int32_t>(tag & 0x7fffffff);
}

enum class ControlKind : uint8_t { kAbort = 1, kCallAnnouncement = 2 };
constexpr Tag control_tag(ControlKind kind, ContextId context) {
  return (Tag{static_cast<uint8_t>(TagClass::kControl)} << kClassShift) |
         (Tag{context} << kContextShift) | static_cast<Tag>(kind);
}
constexpr ControlKind control_kind(Tag tag) {
  return static_cast<ControlKind>(tag & kWhatMask);
}

}  // namespace tutti::transport
