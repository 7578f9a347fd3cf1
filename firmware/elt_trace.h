/*
 * Named trace points (docs/architecture.md §7, hls4ml-style per-stage traces).
 *
 * Built with -DELT_TRACE (host library only), every kernel reports its intermediate vectors
 * under the same stage names the Python integer reference uses, so a mismatch names its first
 * differing stage. Without ELT_TRACE the macros compile to nothing: the device build has no
 * trace code at all.
 */
#ifndef ELT_TRACE_H
#define ELT_TRACE_H

#include <stdint.h>

#ifdef ELT_TRACE
/* Provided by the host wrapper: one vector of n values of `stage` at step `index`.
 * (The adaptation core reports its vectors through elt_trace(), firmware/elt_types.h.) */
void elt_trace_s16(const char *stage, uint32_t index, const int16_t *v, uint32_t n);
void elt_trace_s32(const char *stage, uint32_t index, const int32_t *v, uint32_t n);
#define ELT_TRACE_S16(stage, index, v, n) elt_trace_s16((stage), (index), (v), (n))
#define ELT_TRACE_S32(stage, index, v, n) elt_trace_s32((stage), (index), (v), (n))
#else
#define ELT_TRACE_S16(stage, index, v, n) ((void)0)
#define ELT_TRACE_S32(stage, index, v, n) ((void)0)
#endif

#endif /* ELT_TRACE_H */
