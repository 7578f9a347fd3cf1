"""A device in Python for the host's run tests that need no QEMU: a TCP server speaking
protocol v3 (docs/protocol.md) through the spec model of the device's link (tests/devmodel.py),
whose model runtime answers INFER from a plan's integer reference, with the device's state
modelled: a RESULT holds only when the device's state is the one the reference assumes
(continual: p_prev = the previous sample's best p, set by RESET or the sample before; cmvn:
every earlier sample of the stream since RESET, in order). A host that resumes from the wrong
state gets a wrong RESULT, so the tests can tell.

Sessions, the window and the reply records as the firmware's. The device stays up across
connections (a board; a new Link is a new session)."""

from __future__ import annotations

import socket
import struct
import threading
import zlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from devmodel import DeviceModel
from elatta_host.infer import INFER_HDR, mode_index
from elatta_host.plan import Plan, Stream
from elatta_host.protocol import Err, Msg

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
    model ran each (stream key, index) (replays of the record not counted). The link layer is
    the spec model (tests/devmodel.py); this class is its application."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.by_sample: dict[tuple[int, int, int], tuple[Stream, int]] = {}
        for s in plan.streams:
            for i in range(len(s)):
                key = (mode_index(s.mode), int(s.ids[i]) & 0xFFFFFFFF, _digest(s.x[i]))
                self.by_sample[key] = (s, i)
        inputs = plan.manifest["inputs"]
        app = (
            " ".join(
                f"{k}={inputs[k]['sha256'][:16]}" for k in ("model", "basis", "config", "calib")
            ).encode()
            + b" input=features"
        )
        self.model = DeviceModel(
            max_payload=MAX_PAYLOAD,
            build_id=BUILD_ID,
            app=self._app,
            description=app,
            reply_max=MAX_PAYLOAD,
        )
        self.served: Counter[tuple[str, int]] = Counter()
        self.wrong_state: list[tuple[str, int]] = []  # samples asked from a state not theirs
        self._state = _State()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        self._conns: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"socket://127.0.0.1:{self.port}"

    @property
    def replayed(self) -> int:
        return self.model.frames_replayed

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
        try:
            while data := conn.recv(65536):
                with self._lock:
                    replies = self.model.feed(data)
                conn.sendall(b"".join(f.encode() for f in replies))
        except OSError:
            pass

    def _app(self, type_: int, payload: bytes) -> tuple[int, bytes]:
        if type_ == Msg.RESET:
            k = len(payload) // 4
            self._state = _State(struct.unpack(f"<{k}i", payload) if k else None)
            return Msg.RESET_ACK, b""
        if type_ == Msg.INFER:
            return self._infer(payload)
        return 0, b""

    def _infer(self, payload: bytes) -> tuple[int, bytes]:
        sample_id, mode, T, F = INFER_HDR.unpack_from(payload)
        x = np.frombuffer(payload[INFER_HDR.size :], dtype="<i2").reshape(T, F)
        found = self.by_sample.get((mode, sample_id, _digest(x)))
        if found is None:
            return -Err.PAYLOAD, b""
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
        return Msg.RESULT, encode_result(want)


def _p(p: tuple[int, ...] | None) -> tuple[int, ...] | None:
    return None if p is None or not any(p) else tuple(p)


def _digest(x: Any) -> int:
    return zlib.crc32(np.ascontiguousarray(x, dtype="<i2").tobytes())
