"""The link layer's fixed payloads, described once (docs/protocol.md, "Framing", "Messages",
"Windowed link", "Rate switch", "INFO payload"): the frame header, HELLO's session, ERROR, STATUS,
BAUD, BAUD_ACK, REPLY_PARTS and REPLY_PART (a recorded reply asked for again in parts), INFO with
its board and link blocks, and the board check's BOARD and BOARD_REPLY (docs/board.md §8). The
firmware's offsets (``firmware/fw_link_wire.h``, generated from this table by ``make generate``)
and the host's codecs (``elatta_host.protocol``: ``Status``, ``Info``, ``BoardInfo``, ``LinkInfo``,
the header's struct; ``elatta_host.board_check``) all come from here; tests/tools/test_generated.py
fails when the header is stale and tests/codegen/ir/test_link_wire.py when either side departs.
Little-endian throughout.

The model runtime's payloads (INFER, RESULT, the audio and continuous modes) are described the
same way in ``codegen.ir.wire``, whose ``Field`` and ``Payload`` these use.

Field names are the host's: a dataclass of ``elatta_host.protocol`` takes the values of its
payload by these names, and the C names are ``LINK_<PAYLOAD>_<FIELD>``.
"""

from __future__ import annotations

from codegen.base.resources import jinja_env
from codegen.ir.wire import Field, Payload

# The body's header, before every payload (the CRC-32 follows the payload).
HEADER = Payload(
    "HEADER",
    "the body's header, then the payload and its CRC-32 (docs/protocol.md, Framing)",
    (
        Field("version", "u8", "the protocol version"),
        Field("type", "u8", "the message type"),
        Field("seq", "u32", "the host's seq; a reply carries its request's"),
        Field("length", "u16", "payload bytes"),
    ),
)
HELLO = Payload(
    "HELLO",
    "empty (INFO only), or the host's session nonce, which opens the session",
    (Field("session", "u32", "the session nonce"),),
)
ERROR = Payload(
    "ERROR",
    "a request refused, or a frame of another protocol version",
    (
        Field("code", "u8", "the ERROR code (FW_ERR_*)"),
        Field("type", "u8", "the offending frame's type, as read"),
    ),
)
STATUS = Payload(
    "STATUS",
    "the device's window as it stands; its seq is that of the frame that made the device speak",
    (
        Field("next", "u32", "the next ordered seq served (tag and counter)"),
        Field("held", "u32", "bit i: counter next + i is held (bit 0 never)"),
        Field("cause", "u8", "0 ACK, a link-damage ERROR code, or GAP, DUP, FULL, STALE"),
        Field("type", "u8", "the type of the frame that made the device speak, as read"),
        Field("ring_free", "u16", "bytes free in the receive ring, saturated at 65535"),
        Field("last_error", "u32", "the last ordered seq answered with ERROR (0: none)"),
    ),
)
BAUD = Payload(
    "BAUD",
    "asks for one of the rates INFO's link block lists",
    (
        Field("rate", "u32", "the rate, bits/s"),
        Field("revert_ms", "u16", "the old rate again when no frame comes whole by then"),
    ),
)
BAUD_ACK = Payload(
    "BAUD_ACK",
    "the answer to BAUD, sent at the old rate: the divisors the device will program",
    (
        Field("rate", "u32", "the rate, bits/s"),
        Field("cd", "u16", "BAUDGEN CD (UG585 19.2.3)"),
        Field("bdiv", "u16", "BAUDDIV BDIV"),
    ),
)
REPLY_PARTS = Payload(
    "REPLY_PARTS",
    "asks for the recorded reply to the served ordered request its seq names, again, in parts",
    (
        Field("part", "u8", "reply bytes a part carries, 8..255 (more when 32 cannot hold it)"),
        Field("copies", "u8", "times each part is sent (1..8)"),
        Field("want", "u32", "bit i: part i is wanted (0: every part)"),
    ),
)
REPLY_PART = Payload(
    "REPLY_PART",
    "one part of a recorded reply; the reply's bytes from index * part follow",
    (
        Field("type", "u8", "the recorded reply's type (ERROR included)"),
        Field("index", "u8", "this part's number, from 0"),
        Field("count", "u8", "the reply's parts, 1..32"),
        Field("zero", "u8", "0"),
        Field("part", "u16", "reply bytes a part carries (the last one: what is left)"),
        Field("total", "u16", "the reply's payload bytes"),
    ),
)
INFO = Payload(
    "INFO",
    "the answer to HELLO: its fixed part, then the board block, the link block and the "
    "application's description",
    (
        Field("protocol_version", "u8", "the protocol version"),
        Field("uart", "u8", "the console UART's index"),
        Field("max_payload", "u16", "MAX_PAYLOAD"),
        Field("baud", "u32", "the configured rate, bits/s"),
        Field("uart_ref_hz", "u32", "the UART reference clock the divisors were computed for"),
        Field("frames_ok", "u32", "frames answered normally since reset"),
        Field("frames_err", "u32", "frames answered with ERROR (or a damage STATUS)"),
        Field("frames_dropped", "u32", "frames dropped silently"),
        Field("stack_size", "u32", "the main stack's bytes"),
        Field("stack_used", "u32", "its high-water mark, from stack painting"),
        Field("build_id", "char", "the build id, ASCII, NUL-padded", width=24),
        Field("frames_replayed", "u32", "application requests answered from the records"),
        Field("session", "u32", "the current session nonce"),
    ),
)
INFO_BOARD = Payload(
    "INFO board block",
    "what the board reads back at run time, after INFO's fixed part; its tag is never the first "
    "byte of a description",
    (
        Field("tag", "u8", "FW_INFO_BOARD_TAG"),
        Field("size", "u8", "the block's bytes; the description starts after them"),
        Field("flags", "u8", "bit 0: an L2 cache answered (FW_INFO_BOARD_L2_FOUND)"),
        Field("reserved", "u8", "0"),
        Field("sctlr", "u32", "SCTLR (the A9's) or CCR (an M7's), as running"),
        Field("actlr", "u32", "ACTLR"),
        Field("l2_id", "u32", "PL310 reg0_cache_id (0: absent)"),
        Field("l2_control", "u32", "PL310 reg1_control"),
        Field("l2_aux", "u32", "PL310 reg1_aux_control"),
        Field("uart_cd", "u16", "the console UART's BAUDGEN CD, read back"),
        Field("uart_bdiv", "u16", "its BAUDDIV BDIV, read back"),
        Field("name", "char", "the board preset's name, ASCII, NUL-padded", width=20),
        # the last field, so a 48-byte block of an older firmware reads without it
        Field("uart_rx_overruns", "u32", "RX FIFO overruns the UART driver counted"),
    ),
)
INFO_LINK = Payload(
    "INFO link block",
    "what the host's window may use, the link's counters and the rates BAUD may ask for, after "
    "the board block",
    (
        Field("tag", "u8", "FW_INFO_LINK_TAG"),
        Field("size", "u8", "the block's bytes"),
        Field("n_rates", "u8", "rates listed"),
        Field("window", "u8", "STATUS's window, counters"),
        Field("rx_ring", "u32", "the receive ring's bytes"),
        Field("hold_slots", "u8", "ordered frames held at most"),
        Field("records", "u8", "replies recorded"),
        Field("hold_payload", "u16", "the largest payload of a held frame"),
        Field("baud", "u32", "the rate the UART runs at now"),
        Field("ring_overruns", "u32", "bytes lost to a full ring"),
        Field("rate_reverts", "u32", "rate switches undone"),
        Field("frames_held", "u32", "ordered frames held since reset"),
        Field("frames_stale", "u32", "ordered frames of another session, dropped"),
        Field("next", "u32", "the next ordered seq served"),
        Field("reply_max", "u32", "the largest reply a record keeps (FW_REPLY_MAX)"),
        Field("rates", "u32", "the rates BAUD may ask for (n_rates of them, then 0)", width=8),
    ),
)

# The Zynq-7000 board's check (firmware/board/zynq7000/fw_check.h, docs/board.md §8): an ordered
# application message the board serves ahead of the model runtime.
BOARD = Payload(
    "BOARD",
    "the board check's request: time the global timer, or fill or check a DDR range",
    (
        Field("op", "u8", "FW_CHECK_OP_TIME, _FILL or _CHECK"),
        Field("reserved", "u8", "0", width=3),
        Field("base", "u32", "the range's first byte"),
        Field("length", "u32", "its bytes"),
        Field("seed", "u32", "the pattern's seed"),
    ),
)
BOARD_REPLY = Payload(
    "BOARD_REPLY",
    "the answer to BOARD: the op, the global timer's count, five words the op gives meaning to",
    (
        Field("op", "u8", "the request's op"),
        Field("reserved", "u8", "0", width=3),
        Field("timer_lo", "u32", "the global timer's count when the reply was made, low word"),
        Field("timer_hi", "u32", "its high word"),
        Field("words", "u32", "what the op reports (fw_check.h)", width=5),
    ),
)

# C names: LINK_<NAME>_*
PAYLOADS: dict[str, Payload] = {
    "HEADER": HEADER,
    "HELLO": HELLO,
    "ERROR": ERROR,
    "STATUS": STATUS,
    "BAUD": BAUD,
    "BAUD_ACK": BAUD_ACK,
    "REPLY_PARTS": REPLY_PARTS,
    "REPLY_PART": REPLY_PART,
    "INFO": INFO,
    "INFO_BOARD": INFO_BOARD,
    "INFO_LINK": INFO_LINK,
    "BOARD": BOARD,
    "BOARD_REPLY": BOARD_REPLY,
}


def field(p: Payload, name: str) -> Field:
    """Field ``name`` of ``p``."""
    for f in p.fields:
        if f.name == name:
            return f
    raise KeyError(f"{p.name} has no field {name!r}: it has {[f.name for f in p.fields]}")


# (Both below read PAYLOADS when called: tests/codegen/ir/test_link_wire.py renders a changed
# description.)


def info_description() -> int:
    """Where INFO's application description starts: after the fixed part and both blocks."""
    return sum(PAYLOADS[k].fixed_size for k in ("INFO", "INFO_BOARD", "INFO_LINK"))


def proto_sizes() -> dict[str, int]:
    """The sizes firmware/fw_proto.h states with the protocol's constants
    (tests/host/test_protocol.py reads them there): the generated header asserts each equals the
    description.
    FW_SEQ_READABLE: the decoded bytes that hold the header's version, type and seq."""
    header, info, board = PAYLOADS["HEADER"], PAYLOADS["INFO"], PAYLOADS["INFO_BOARD"]
    return {
        "FW_HDR_SIZE": header.fixed_size,
        "FW_SEQ_READABLE": header.offsets()["seq"] + field(header, "seq").size,
        "FW_SESSION_SIZE": PAYLOADS["HELLO"].fixed_size,
        "FW_BUILD_ID_SIZE": field(info, "build_id").width,
        "FW_INFO_SIZE": info.fixed_size,
        "FW_INFO_BOARD_SIZE": board.fixed_size,
        "FW_INFO_BOARD_NAME_SIZE": field(board, "name").width,
    }


def render_c_header() -> str:
    """``firmware/fw_link_wire.h`` (templates/fw_link_wire.h.j2), before clang-format."""
    return (
        jinja_env()
        .get_template("fw_link_wire.h.j2")
        .render(
            payloads=[(name, p, p.offsets()) for name, p in PAYLOADS.items()],
            proto_sizes=proto_sizes(),
            info_description=info_description(),
        )
    )


if __name__ == "__main__":  # the header, before clang-format (see its banner)
    print(render_c_header(), end="")
