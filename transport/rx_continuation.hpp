// RxContinuation: the receive side's memory of the last segment Engine::admit() took in, so
// that the next segment of the same message is admitted by comparing header bytes
// (wire::decode_continuation) instead of decoding and checking it again. Owned by the Engine
// (engine.hpp rx_cont_), used by on_packet and admit (engine.cpp). Plain data; thread-safety:
// the engine's (none).
#pragma once
#include <cstdint>

#include "transport/ops.hpp"
#include "transport/packet_io.hpp"
#include "transport/wire.hpp"

namespace pollfab::transport {

// The last packet admit() took in when it was a Data or RMA segment that its message
// continues after (not the last, no bundle): its sender, its peer and its header bytes;
// h holds the header of the newest packet on_packet took in (decoded in place). The next
// packet from that sender whose header has the same fields but the segment's own and the
// ACK it carries (wire::decode_continuation: a later segment of that message, or of another
// with the same length, tag and data) is taken in by that comparison: decode() and the
// checks up to the peer lookup would find what they found for the packet admit() took in
// (EngineStats::rx_continued). Forgotten at the next packet admit() takes in, a checksum
// failure, any peer's reset and a new endpoint id; a message's last segment leaves it (what
// follows with the same header is a duplicate or another such message, which the comparison
// takes in exactly as decode() would). Peers are never removed. Only on_packet, which nothing
// it calls re-enters, uses h.
struct RxContinuation {
  bool valid = false;
  PeerId pid = kNoPeer;
  HostAddr src;
  wire::Header h;
  uint8_t raw[wire::kHeaderBytes] = {};
};

}  // namespace pollfab::transport
