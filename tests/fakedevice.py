"""A device in Python for the host's run tests that need no QEMU: a TCP server speaking
protocol v2 (docs/protocol.md) whose model runtime answers INFER from a plan's integer
reference, with the device's state modelled: a RESULT holds only when the device's state is the
one the reference assumes (continual: p_prev = the previous sample's best p, set by RESET or the
sample before; cmvn: every earlier sample of the stream since RESET, in order). A host that
resumes from the wrong state gets a wrong RESULT, so the tests can tell.

Sessions and the replay rule as the firmware: the record is keyed by (session, type, seq).
The device stays up across connections (a board; a new Link is a new session)."""

from __future__ import annotations

import socket
import struct
import threading
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from elatta_host.infer import INFER_HDR, mode_index
from elatta_host.plan import Plan, Stream
from elatta_host.protocol import Err, Frame, FrameDecoder, Info, Msg

from codegen.ir import wire
from codegen.ir.modes import CONTINUAL_MODES, STATEFUL_MODES

BUILD_ID = "fw-fakedevice"
MAX_PAYLOAD = 2048


def encode_result(fields: dict[str, Any], ticks: int = 1000) -> bytes:
    """A RESULT payload (codegen.ir.wire.RESULT) from the reference's fields."""
    layout = wire.RESULT
    sizes = {"C": len(fields["logits"]), "k": len(fields["p_best"]), "H": len(fields["z"])}
    values = {**fields, **sizes, "ticks_encoder": ticks, "ticks_adapt": ticks,
              "ticks_total": 3 * ticks, "ticks_link": (ticks,), "link_bytes": (1000,)}  # fmt: skip
    out = struct.pack(layout.fixed_format, *(values[f.name] for f in layout.fixed))
    for f in layout.arrays:
        arr = values[f.name]
        out += struct.pack(f"<{len(arr)}{wire.TYPES[f.type][0]}", *arr)
    return out


@dataclass
class _State:
    p_prev: tuple[int, ...] | None = None  # None: a reset state (p_prev = 0)
    history: list[tuple[str, int]] = field(default_factory=list)  # samples since RESET


class FakeDevice:
    """``port``: where to connect (``socket://127.0.0.1:PORT``). ``served``: how often the
    model ran each (stream key, index) (replays of the record not counted)."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_sample: dict[tuple[int, int, int], tuple[Stream, int]] = {}
        for s in plan.streams:
            for i in range(len(s)):
                key = (mode_index(s.mode), int(s.ids[i]) & 0xFFFFFFFF, _digest(s.x[i]))
                self.by_sample[key] = (s, i)
        inputs = plan.manifest["inputs"]
        self.app = (
            " ".join(
                f"{k}={inputs[k]['sha256'][:16]}" for k in ("model", "basis", "config", "calib")
            ).encode()
            + b" input=features"
        )
        self.session = 0
        self.frames_ok = self.frames_err = self.replayed = 0
        self.served: Counter[tuple[str, int]] = Counter()
        self.wrong_state: list[tuple[str, int]] = []  # samples asked from a state not theirs
        self._state = _State()
        self._last: tuple[int, int, int, Frame] | None = None
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._conns: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._closed = True
        for s in [*self._conns, self._listener]:
            try:
                s.close()
            except OSError:
                pass

    def __enter__(self) -> FakeDevice:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        dec = FrameDecoder()
        try:
            while data := conn.recv(65536):
                for item in dec.feed(data):
                    if isinstance(item, Frame):
                        with self._lock:
                            reply = self._handle(item)
                    else:  # damage the host sent: a link-damage ERROR (seq unknown: 0)
                        reply = Frame(Msg.ERROR, 0, bytes([Err.CRC, 0]))
                    conn.sendall(reply.encode())
        except OSError:
            pass

    def _handle(self, f: Frame) -> Frame:
        if f.type == Msg.HELLO:
            if len(f.payload) == 4:
                (self.session,) = struct.unpack("<I", f.payload)
            self.frames_ok += 1
            counts = (self.frames_ok, self.frames_err, 0, 16384, 4096)
            info = Info(2, 0, MAX_PAYLOAD, 115_200, 100_000_000, *counts, BUILD_ID,
                        self.replayed, self.app, self.session)  # fmt: skip
            return Frame(Msg.INFO, f.seq, info.pack())
        if self._last is not None and self._last[:3] == (self.session, f.type, f.seq):
            self.replayed += 1
            return self._last[3]
        if f.type == Msg.RESET:
            k = len(f.payload) // 4
            self._state = _State(struct.unpack(f"<{k}i", f.payload) if k else None)
            reply = Frame(Msg.RESET_ACK, f.seq)
        elif f.type == Msg.INFER:
            reply = self._infer(f)
        else:
            self.frames_err += 1
            return Frame(Msg.ERROR, f.seq, bytes([Err.TYPE, f.type]))
        if reply.type != Msg.ERROR:
            self.frames_ok += 1
            self._last = (self.session, f.type, f.seq, reply)
        return reply

    def _infer(self, f: Frame) -> Frame:
        sample_id, mode, T, F = INFER_HDR.unpack_from(f.payload)
        x = np.frombuffer(f.payload[INFER_HDR.size :], dtype="<i2").reshape(T, F)
        found = self.by_sample.get((mode, sample_id, _digest(x)))
        if found is None:
            self.frames_err += 1
            return Frame(Msg.ERROR, f.seq, bytes([Err.PAYLOAD, f.type]))
        s, i = found
        want = dict(s.expected(i))
        st = self._state
        if s.mode in CONTINUAL_MODES:
            before = None if i == 0 else tuple(int(v) for v in s.ref["p_best"][i - 1])
            right = _p(st.p_prev) == _p(before)
        elif s.mode in STATEFUL_MODES:
            right = st.history == [(s.key, j) for j in range(i)]
        else:
            right = True
        if not right:  # the state the reference assumes is not the device's: another answer
            self.wrong_state.append((s.key, i))
            want["p_best"] = tuple(v + 1 for v in want["p_best"])
            want["logits"] = tuple(v ^ 1 for v in want["logits"])
        self.served[(s.key, i)] += 1
        self._state = _State(tuple(want["p_best"]), [*st.history, (s.key, i)])
        return Frame(Msg.RESULT, f.seq, encode_result(want))


def _p(p: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if p is None or not any(p) else tuple(p)


def _digest(x: Any) -> int:
    return zlib.crc32(np.ascontiguousarray(x, dtype="<i2").tobytes())
