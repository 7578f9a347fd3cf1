/*
 * Host harness for the ELaTTA kernels (tests/firmware/test_int_host_c.py): the unchanged
 * firmware/elt_*.c plus any number of generated params files (one prefix each, listed in the
 * test-generated harness_registry.c), built with -fsanitize=address,undefined and driven over
 * stdin/stdout.
 *
 *   harness adapt TRACE_FILE   in: u32 param, u32 N, N x (u32 id, D x i16 z)
 *                              out: N records of i32 (pred0, pred, H0, H, nfix, p[k], l0[C], l[C])
 *   harness rng                in: u64 seed, u32 n_ids, u32 count, n_ids x u32 id; out: u32 draws
 *   harness gauss              as rng, with a leading u32 param; out: i32 Q3.28 normals
 *   harness entropy            in: u32 param, u32 n, u32 C, i32 frac, n x C i16; out: (H, argmax)
 *   harness udiv               in: u32 n, n x (u64 num, u64 den); out: n x (u64 elt_udiv64,
 *                              u64 elt_udiv64_r)
 *   harness isqrt              in: u32 n, n x u64 (< 2^62); out: n x u32 elt_isqrt64
 *   harness tables             in: u32 param; out: exp2 (257), log2 (257), gauss (1056) as i32
 *   harness params             in: u32 param; out: text "name value" lines of the scalar fields
 *   harness sizes              out: text "name bytes" lines
 *
 * Trace file records (when built with -DELT_TRACE and TRACE_FILE is not "-"):
 *   i32 sample, i32 index, i32 name_len, name, i32 n, n x i32.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "elt_adapt.h"
#include "elt_entropy_s16.h"
#include "elt_rng.h"

extern const elt_adapt_params_t *const harness_params[];
extern const int32_t harness_n_params;

static FILE *trace_out;
static int32_t trace_sample;

static void die(const char *msg)
{
    fprintf(stderr, "harness: %s\n", msg);
    exit(2);
}

static void rd(void *p, size_t n)
{
    if (n != 0 && fread(p, 1, n, stdin) != n) {
        die("short read");
    }
}

static void wr(const void *p, size_t n)
{
    if (n != 0 && fwrite(p, 1, n, stdout) != n) {
        die("short write");
    }
}

static uint32_t rd_u32(void)
{
    uint32_t v;
    rd(&v, sizeof v);
    return v;
}

static void wr_i32(int32_t v)
{
    wr(&v, sizeof v);
}

#ifdef ELT_TRACE
void elt_trace(const char *stage, int32_t index, const int32_t *data, int32_t n)
{
    int32_t len = (int32_t)strlen(stage);
    if (trace_out == NULL) {
        return;
    }
    if (fwrite(&trace_sample, 4, 1, trace_out) != 1 || fwrite(&index, 4, 1, trace_out) != 1 ||
        fwrite(&len, 4, 1, trace_out) != 1 ||
        fwrite(stage, 1, (size_t)len, trace_out) != (size_t)len ||
        fwrite(&n, 4, 1, trace_out) != 1 ||
        (n > 0 && fwrite(data, 4, (size_t)n, trace_out) != (size_t)n)) {
        die("trace write failed");
    }
}
#endif

static const elt_adapt_params_t *param(uint32_t i)
{
    if (i >= (uint32_t)harness_n_params) {
        die("param index out of range");
    }
    return harness_params[i];
}

static void cmd_adapt(const char *trace_path)
{
    const elt_adapt_params_t *p = param(rd_u32());
    uint32_t n = rd_u32();
    int16_t z[ELT_D_MAX];
    static elt_adapt_state_t st; /* static: the size the device reserves, not the host stack */
    elt_adapt_result_t res;
    uint32_t i;
    int32_t j;
    if (strcmp(trace_path, "-") != 0) {
        trace_out = fopen(trace_path, "wb");
        if (trace_out == NULL) {
            die("cannot open trace file");
        }
    }
    elt_adapt_reset(&st);
    for (i = 0; i < n; i++) {
        uint32_t id = rd_u32();
        rd(z, sizeof(int16_t) * (size_t)p->dim);
        trace_sample = (int32_t)i;
        memset(&res, 0x5A, sizeof res); /* every reported field must be written */
        elt_adapt_run(p, &st, z, id, &res);
        wr_i32(res.pred_noadapt);
        wr_i32(res.pred);
        wr_i32(res.H_noadapt);
        wr_i32(res.H_best);
        wr_i32(res.n_pivot_fix);
        for (j = 0; j < p->es.k; j++) {
            wr_i32(res.p_best[j]);
        }
        for (j = 0; j < p->n_classes; j++) {
            wr_i32(res.logits_noadapt[j]);
        }
        for (j = 0; j < p->n_classes; j++) {
            wr_i32(res.logits[j]);
        }
    }
    if (trace_out != NULL) {
        fclose(trace_out);
    }
}

/* count draws of each id's generator as one block (elt_rng_block_u32 / elt_rng_gauss_block),
 * in pieces of 256: a block's draws do not depend on where a multiple of 4 splits it */
static void cmd_rng(int gauss)
{
    const elt_adapt_params_t *p = gauss ? param(rd_u32()) : NULL;
    uint64_t seed;
    uint32_t n_ids;
    uint32_t count;
    uint32_t i;
    uint32_t c;
    rd(&seed, sizeof seed);
    n_ids = rd_u32();
    count = rd_u32();
    for (i = 0; i < n_ids; i++) {
        elt_rng_t r;
        elt_rng_seed(&r, seed, rd_u32());
        for (c = 0; c < count; c += 256) {
            const int32_t n = (int32_t)(count - c < 256 ? count - c : 256);
            int32_t buf[256];
            int32_t j;
            if (gauss) {
                elt_rng_gauss_block(&r, buf, n, p->gauss_lut);
            } else {
                elt_rng_block_u32(&r, (uint32_t *)buf, n);
            }
            for (j = 0; j < n; j++) {
                wr_i32(buf[j]);
            }
        }
    }
}

static void cmd_entropy(void)
{
    const elt_adapt_params_t *p = param(rd_u32());
    uint32_t n = rd_u32();
    uint32_t c = rd_u32();
    int32_t frac;
    int16_t l[256];
    uint32_t i;
    rd(&frac, sizeof frac);
    if (c < 1 || c > 256) {
        die("entropy: C out of range");
    }
    for (i = 0; i < n; i++) {
        rd(l, sizeof(int16_t) * c);
        wr_i32(elt_entropy_s16(l, (int32_t)c, frac, p->es.exp2_lut, p->log2_lut));
        wr_i32(elt_argmax_s16(l, (int32_t)c));
    }
}

static void cmd_udiv(void)
{
    uint32_t n = rd_u32();
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint64_t v[2];
        uint64_t q[2];
        elt_recip_t r;
        rd(v, sizeof v);
        if (v[1] == 0) {
            die("udiv: zero denominator");
        }
        elt_recip_init(&r, v[1]);
        q[0] = elt_udiv64(v[0], v[1]);
        q[1] = elt_udiv64_r(v[0], &r);
        wr(q, sizeof q);
    }
}

static void cmd_isqrt(void)
{
    uint32_t n = rd_u32();
    uint32_t i;
    for (i = 0; i < n; i++) {
        uint64_t v;
        uint32_t r;
        rd(&v, sizeof v);
        if (v >= ((uint64_t)1 << 62)) {
            die("isqrt: n >= 2^62");
        }
        r = elt_isqrt64(v);
        wr(&r, sizeof r);
    }
}

static void cmd_tables(void)
{
    const elt_adapt_params_t *p = param(rd_u32());
    wr(p->es.exp2_lut, 257 * 4);
    wr(p->log2_lut, 257 * 4);
    wr(p->gauss_lut, 32 * 33 * 4);
}

static void cmd_params(void)
{
    const elt_adapt_params_t *p = param(rd_u32());
    const elt_cmaes_params_t *e = &p->es;
    int32_t i;
    printf("n_classes %" PRId32 "\ndim %" PRId32 "\nmode %" PRId32 "\nseed %" PRIu64 "\n",
           p->n_classes, p->dim, p->mode, p->seed);
    printf("head_shift %" PRId32 "\nlogit_frac %" PRId32 "\nzt_shift %" PRId32 "\ng_shift %" PRId32
           "\n",
           p->head_shift, p->logit_frac, p->zt_shift, p->g_shift);
    printf("beta %" PRId32 "\nradius %" PRId32 "\nqv1 %" PRId32 "\n", p->beta, p->radius, p->qv1);
    printf("k %" PRId32 "\nlam %" PRId32 "\nmu %" PRId32 "\nn_iter %" PRId32 "\n", e->k, e->lam,
           e->mu, e->n_iter);
    printf("one_minus_cs %" PRId32 "\ngain_s %" PRId32 "\none_minus_cc %" PRId32 "\ngain_c %" PRId32
           "\n",
           e->one_minus_cs, e->gain_s, e->one_minus_cc, e->gain_c);
    printf("c1 %" PRId32 "\ndecay_h1 %" PRId32 "\ndecay_h0 %" PRId32 "\ncs_over_ds %" PRId32
           "\ninv_chi %" PRId32 "\nln_sigma0 %" PRId32 "\n",
           e->c1, e->decay_h1, e->decay_h0, e->cs_over_ds, e->inv_chi, e->ln_sigma0);
    printf("grid_on %" PRId32 "\ngrid_frac %" PRId32 "\ngrid_lo %" PRId32 "\ngrid_hi %" PRId32 "\n",
           e->grid_on, e->grid_frac, e->grid_lo, e->grid_hi);
    for (i = 0; i < e->mu; i++) {
        printf("w.%" PRId32 " %" PRId32 "\n", i, e->w[i]);
    }
    for (i = 0; i < e->lam; i++) {
        printf("wc.%" PRId32 " %" PRId32 "\nwc_sqrt.%" PRId32 " %" PRId32 "\n", i, e->wc[i], i,
               e->wc_sqrt[i]);
    }
    printf("c1_sqrt %" PRId32 "\n", e->c1_sqrt);
    for (i = 0; i < e->n_iter; i++) {
        printf("hsig_thr.%" PRId32 " %" PRId64 "\n", i, e->hsig_thr[i]);
    }
    for (i = 0; i < p->n_classes * p->dim; i++) { /* W^T [D][C] in the params, W [C][D] */
        printf("W.%" PRId32 " %d\n", i, p->W[(i % p->dim) * p->n_classes + i / p->dim]);
    }
    for (i = 0; i < p->n_classes; i++) {
        printf("b.%" PRId32 " %" PRId32 "\n", i, p->b[i]);
    }
    for (i = 0; i < p->n_classes * e->k; i++) { /* G^T [k][C] in the params, G [C][k] printed */
        printf("G.%" PRId32 " %" PRId32 "\n", i, p->G[(i % e->k) * p->n_classes + i / e->k]);
    }
}

static void cmd_sizes(void)
{
    printf("elt_adapt_state_t %zu\n", sizeof(elt_adapt_state_t));
    printf("elt_adapt_result_t %zu\n", sizeof(elt_adapt_result_t));
    printf("elt_adapt_params_t %zu\n", sizeof(elt_adapt_params_t));
    printf("ELT_K_MAX %d\nELT_LAM_MAX %d\nELT_D_MAX %d\nELT_C_MAX %d\n", ELT_K_MAX, ELT_LAM_MAX,
           ELT_D_MAX, ELT_C_MAX);
    printf("ELT_X_FRAC %d\nELT_Z_FRAC %d\nELT_C_FRAC %d\nELT_RATE_FRAC %d\nELT_GAIN_FRAC %d\n",
           ELT_X_FRAC, ELT_Z_FRAC, ELT_C_FRAC, ELT_RATE_FRAC, ELT_GAIN_FRAC);
    printf("ELT_LNSIG_FRAC %d\nELT_NORM2_FRAC %d\nELT_H_FRAC %d\nELT_PIVOT_EPS %d\n",
           ELT_LNSIG_FRAC, ELT_NORM2_FRAC, ELT_H_FRAC, ELT_PIVOT_EPS);
    printf("ELT_LNSIG_MIN %d\nELT_LNSIG_MAX %d\nELT_LOG2E_Q30 %d\nELT_LN2_Q30 %d\n", ELT_LNSIG_MIN,
           ELT_LNSIG_MAX, ELT_LOG2E_Q30, ELT_LN2_Q30);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        die("usage: harness adapt|rng|gauss|entropy|udiv|isqrt|tables|params|sizes [TRACE_FILE]");
    }
    if (strcmp(argv[1], "adapt") == 0) {
        cmd_adapt(argc > 2 ? argv[2] : "-");
    } else if (strcmp(argv[1], "rng") == 0) {
        cmd_rng(0);
    } else if (strcmp(argv[1], "gauss") == 0) {
        cmd_rng(1);
    } else if (strcmp(argv[1], "entropy") == 0) {
        cmd_entropy();
    } else if (strcmp(argv[1], "udiv") == 0) {
        cmd_udiv();
    } else if (strcmp(argv[1], "isqrt") == 0) {
        cmd_isqrt();
    } else if (strcmp(argv[1], "tables") == 0) {
        cmd_tables();
    } else if (strcmp(argv[1], "params") == 0) {
        cmd_params();
    } else if (strcmp(argv[1], "sizes") == 0) {
        cmd_sizes();
    } else {
        die("unknown command");
    }
    return fflush(stdout) == 0 ? 0 : 3;
}
