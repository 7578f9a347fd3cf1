/*
 * Device protocol v3 constants (docs/protocol.md). host/protocol.py mirrors every value here;
 * tests/host/test_protocol.py::test_constants_match_c_header keeps the two equal.
 */
#ifndef FW_PROTO_H
#define FW_PROTO_H

#define FW_PROTO_VERSION 3u

/* Body layout: version u8, type u8, seq u32, length u16, payload, CRC-32 u32 (little-endian). */
#define FW_HDR_SIZE 8u
#define FW_CRC_SIZE 4u
#define FW_SEQ_READABLE 6u /* decoded bytes needed to read version, type and seq */

/* COBS worst case: one code byte per 254 data bytes, plus the first code byte. */
#define FW_COBS_MAX(n) ((n) + ((n) + 253u) / 254u + 1u)

/* Message types: requests have bit 7 clear, replies set it. */
#define FW_MSG_HELLO 0x01u
#define FW_MSG_ECHO 0x02u
#define FW_MSG_INFO 0x81u
#define FW_MSG_ECHO_REPLY 0x82u
#define FW_MSG_ERROR 0x7Fu
/* Application messages, served by the model runtime (fw_app_t); replies set bit 7. */
#define FW_MSG_INFER 0x03u
#define FW_MSG_RESET 0x04u
#define FW_MSG_RESULT 0x83u
#define FW_MSG_RESET_ACK 0x84u
/* The streaming audio mode (docs/protocol.md, "Audio mode"): an utterance is AUDIO_BEGIN, AUDIO
 * chunks of int16 PCM (or AUDIO_ADPCM blocks), AUDIO_END (answered with RESULT). */
#define FW_MSG_AUDIO_BEGIN 0x05u
#define FW_MSG_AUDIO 0x06u
#define FW_MSG_AUDIO_END 0x07u

/* The rate switch (docs/protocol.md, "Rate switch"): BAUD asks for one of the rates INFO lists,
 * BAUD_ACK answers at the old rate, then the UART runs at the new one until a frame arrives
 * whole at it or the revert time passes. */
#define FW_MSG_BAUD 0x08u
#define FW_MSG_BAUD_ACK 0x88u
/* AUDIO with its samples as one IMA-ADPCM block (codegen/base/adpcm.py, elt_adpcm.h). */
#define FW_MSG_AUDIO_ADPCM 0x09u
/* The continuous mode (docs/stream.md): STREAM_BEGIN opens a stream without clip boundaries,
 * every STREAM chunk of int16 PCM (or STREAM_ADPCM block) is answered with DETECTIONS (the
 * detections it completed, possibly none), STREAM_END with STREAM_SUMMARY. */
#define FW_MSG_STREAM_BEGIN 0x0Au
#define FW_MSG_STREAM 0x0Bu
#define FW_MSG_STREAM_ADPCM 0x0Cu
#define FW_MSG_STREAM_END 0x0Du
#define FW_MSG_DETECTIONS 0x8Bu
#define FW_MSG_STREAM_SUMMARY 0x8Du
/* The link's own report (docs/protocol.md, "Windowed link"): the next ordered seq the device will
 * serve, the ordered frames it holds beyond it, and why it speaks. */
#define FW_MSG_STATUS 0x8Fu
/* A recorded reply asked for again in parts (docs/protocol.md, "Replies in parts"): REPLY_PARTS
 * names a served ordered request by its seq; the device answers with REPLY_PART frames, each a
 * slice of the record, so that a line which damages short chunks of the stream still carries a
 * reply piece by piece. */
#define FW_MSG_REPLY_PARTS 0x0Eu
#define FW_MSG_REPLY_PART 0x8Eu
#define FW_PART_MIN 8u        /* reply bytes a part carries at least */
#define FW_PART_COUNT_MAX 32u /* parts of one reply at most: REPLY_PARTS' want bitmap */
#define FW_PART_COPIES_MAX 8u /* times a part is sent at most for one REPLY_PARTS */

/* Ordered frames (every application type) carry seq = tag << 24 | copy << 20 | counter: the tag
 * is the low 7 bits of the session nonce (a frame of another session is never served), the
 * 20-bit counter starts at 1 with each session and is compared modulo 2^20, and the copy (the
 * host's transmission of the frame, modulo 16) is not part of the frame's identity: the device
 * echoes it in the reply or STATUS the frame causes, so the host knows which copy arrived.
 * Control frames (HELLO, ECHO, BAUD) are served on arrival whatever their seq; the host gives
 * them seqs with bit 31 set. */
#define FW_SEQ_CONTROL 0x80000000u
#define FW_SEQ_TAG_SHIFT 24u
#define FW_SEQ_TAG_MASK 0x7Fu
#define FW_SEQ_COPY_MASK 0x00F00000u
#define FW_SEQ_COUNT_MASK 0x000FFFFFu
/* A type with this bit is one part of a longer message of type & ~FW_TYPE_MORE, more parts
 * following in the next seqs; the part without it ends the message. */
#define FW_TYPE_MORE 0x40u
/* STATUS's window bitmap: bit i = seq next + i is held (bit 0 never: next is served on
 * arrival); a frame is held when 0 < seq - next < FW_WINDOW. */
#define FW_WINDOW 32u

/* ERROR codes (docs/protocol.md, "How the device treats a frame"). */
#define FW_ERR_CRC 1u
#define FW_ERR_SHORT 2u
#define FW_ERR_LENGTH 3u
#define FW_ERR_TOO_LONG 4u
#define FW_ERR_COBS 5u
#define FW_ERR_VERSION 6u
#define FW_ERR_TYPE 7u
#define FW_ERR_PAYLOAD 8u /* the application rejected the payload (size, shape, mode) */
/* STATUS causes: 0, or a link-damage ERROR code above (the frame that made the device speak was
 * damaged), or why an intact ordered frame was not served on arrival. */
#define FW_CAUSE_ACK 0u    /* ordered frames were served without a reply of their own */
#define FW_CAUSE_GAP 9u    /* beyond next: held (its bit set) until the frames before it come */
#define FW_CAUSE_DUP 10u   /* served already and no reply recorded for it: the window as it is */
#define FW_CAUSE_FULL 11u  /* beyond the window, or too long to hold, or no free slot: dropped */
#define FW_CAUSE_STALE 12u /* another session's tag, or a control seq on an ordered type */

/* HELLO payload: empty (INFO only) or the host's session nonce (u32), which the device folds into
 * its replay key so that no request of one session is answered from another's record. */
#define FW_SESSION_SIZE 4u

/* INFO (docs/protocol.md, "INFO payload"): its fixed part, the board block, the link block, then
 * the application's description. The layout is codegen.ir.link_wire's (fw_link_wire.h, which
 * asserts the sizes below); these are stated here with the protocol's other constants. */
#define FW_BUILD_ID_SIZE 24u
#define FW_INFO_SIZE 64u /* fixed part; the application's description fills the rest */

/* INFO's board block, right after the fixed part: a tag byte that an application description
 * (ASCII text) never starts with, its size, then what the board reads back at run time. A host
 * finds the description after the block when the tag is there and at FW_INFO_SIZE otherwise, so
 * INFO of a firmware without the block still reads. */
#define FW_INFO_BOARD_TAG 0xB1u
#define FW_INFO_BOARD_SIZE 52u
#define FW_INFO_BOARD_NAME_SIZE 20u
#define FW_INFO_BOARD_L2_FOUND 0x01u /* flags bit: an L2 cache controller answered */

/* INFO's link block, after the board block: what the host's window may use and the rates the
 * UART can switch to (its layout: LINK_INFO_LINK_* of fw_link_wire.h). */
#define FW_INFO_LINK_TAG 0xB2u

/* The payloads of STATUS (the window), ERROR, BAUD and BAUD_ACK: LINK_* of fw_link_wire.h. */

#endif /* FW_PROTO_H */
