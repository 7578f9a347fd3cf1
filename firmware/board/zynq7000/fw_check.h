/*
 * The board check's message (`codegen board check`, docs/board.md §8; host side:
 * host/board_check.py, which mirrors every value here): one application message the board serves
 * ahead of the model runtime, to time the global timer against the host's clock and to walk the
 * DDR the firmware does not occupy. It travels as any ordered application message
 * (docs/protocol.md, "Windowed link"); the model runtime never sees it.
 *
 * The layouts are codegen.ir.link_wire's (LINK_BOARD_*, LINK_BOARD_REPLY_* in fw_link_wire.h):
 * BOARD request: op u8, 3 bytes reserved (0), base u32, length u32, seed u32.
 * BOARD_REPLY: op u8, 3 bytes reserved, the global timer's 64-bit count when the reply was made
 * (lo u32, hi u32), then five u32 whose meaning depends on op:
 *   TIME:  DDR bytes (FW_DDR_BYTES), first byte the walk may write, FW_TIMER_HZ, 0, 0
 *   FILL:  words written, ticks taken, 0, 0, 0
 *   CHECK: words read, ticks taken, words that differed, the first such address, its word
 * FILL writes pattern(a) = (a / 4) * 0x9E3779B1 ^ seed to every word address a of
 * [base, base + length); CHECK reads the same range and counts words that differ. The multiplier
 * is odd, so every word of the 4 GiB space gets its own pattern: a DDR that aliases (a wrong size,
 * a stuck address line) shows up as a mismatch. A range outside [__ddr_free, FW_DDR_BYTES), not
 * word-aligned or longer than FW_CHECK_WALK_MAX is refused with ERROR(PAYLOAD).
 */
#ifndef FW_CHECK_H
#define FW_CHECK_H

#define FW_MSG_BOARD 0x30u
#define FW_MSG_BOARD_REPLY 0xB0u
#define FW_CHECK_REQ_SIZE 16u
#define FW_CHECK_REPLY_SIZE 32u
#define FW_CHECK_OP_TIME 1u
#define FW_CHECK_OP_FILL 2u
#define FW_CHECK_OP_CHECK 3u
#define FW_CHECK_WALK_MAX (16u << 20) /* bytes a request may walk: well under a second */
#define FW_CHECK_PATTERN_MUL 0x9E3779B1u

#endif /* FW_CHECK_H */
