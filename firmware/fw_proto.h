/*
 * Device protocol v2 constants (docs/protocol.md). host/protocol.py mirrors every value here;
 * tests/test_protocol.py::test_constants_match_c_header keeps the two equal.
 */
#ifndef FW_PROTO_H
#define FW_PROTO_H

#define FW_PROTO_VERSION 2u

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
 * chunks of int16 PCM, AUDIO_END (answered with RESULT). */
#define FW_MSG_AUDIO_BEGIN 0x05u
#define FW_MSG_AUDIO 0x06u
#define FW_MSG_AUDIO_END 0x07u
#define FW_MSG_AUDIO_ACK 0x85u

/* ERROR codes (docs/protocol.md, "How the device treats a frame"). */
#define FW_ERR_CRC 1u
#define FW_ERR_SHORT 2u
#define FW_ERR_LENGTH 3u
#define FW_ERR_TOO_LONG 4u
#define FW_ERR_COBS 5u
#define FW_ERR_VERSION 6u
#define FW_ERR_TYPE 7u
#define FW_ERR_PAYLOAD 8u /* the application rejected the payload (size, shape, mode) */

/* HELLO payload: empty (INFO only) or the host's session nonce (u32), which the device folds into
 * its replay key so that no request of one session is answered from another's record. */
#define FW_SESSION_SIZE 4u

#define FW_BUILD_ID_SIZE 24u
#define FW_INFO_SIZE 64u /* fixed part; the application's description fills the rest */

/* INFO's board block, right after the fixed part (docs/protocol.md, "INFO payload"): a tag byte
 * that an application description (ASCII text) never starts with, its size, then what the board
 * reads back at run time. A host finds the description after the block when the tag is there and
 * at FW_INFO_SIZE otherwise, so INFO of a firmware without the block still reads. */
#define FW_INFO_BOARD_TAG 0xB1u
#define FW_INFO_BOARD_SIZE 52u
#define FW_INFO_BOARD_NAME_SIZE 20u
#define FW_INFO_BOARD_L2_FOUND 0x01u /* flags bit: an L2 cache controller answered */

#endif /* FW_PROTO_H */
