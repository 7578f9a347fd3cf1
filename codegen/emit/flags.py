"""The -D flags every translation unit of one model compiles with: the firmware build, the host
libraries of the tests and the bench all take them from here, so no two builds of one model
differ in a size or a switch."""

from __future__ import annotations

from codegen.emit.adapt import adapt_cflags
from codegen.emit.mfcc import mfcc_cflags
from codegen.ir import wire
from codegen.ir.nodes import QModel
from codegen.stages.registry import tables


def model_cflags(q: QModel) -> tuple[str, ...]:
    """-D flags every translation unit of this model needs (the adaptation state's sizes)."""
    pool = {"last": (), "mean": ("-DELT_LSTM_POOL=1",), "max": ("-DELT_LSTM_POOL=2",)}
    # the pooling of the top layer (an inner layer hands on its sequence): the LSTM kernel's
    # plain C selects it at compile time (firmware/elt_lstm_s16.h ELT_LSTM_POOL)
    last = q.encoder[-1]
    if q.adapt is None:
        return pool[last.pool]
    # the input stages' C: their state's sizes (each table's flags, codegen.stages.registry)
    stages = tuple(f for t in tables() if t.name in q.stages for f in t.cflags(q.stages[t.name]))
    # the audio mode's front end: its work area sized exactly for this model's features
    mfcc: tuple[str, ...] = ()
    if q.mfcc is not None:
        mfcc = mfcc_cflags(q.mfcc)
    # the protocol server's reply record holds the largest reply of the model runtime: the
    # audio mode's RESULT (codegen.ir.wire RESULT_STREAM, docs/protocol.md), or the continuous
    # mode's DETECTIONS with its most windows (docs/stream.md)
    C = len(q.source.classes)
    most = wire.STREAM_MAX_WINDOWS
    reply = max(
        wire.RESULT_STREAM.size(k=q.adapt.cfg.k, C=C, H=q.latent_size),
        wire.DETECTIONS.size(nd=most, nw=most, C=C),
        wire.STREAM_SUMMARY.fixed_size,
    )
    return (*adapt_cflags(q.adapt), *stages, *pool[last.pool], *mfcc, f"-DFW_REPLY_MAX={reply}u")
