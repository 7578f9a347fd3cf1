/*
 * Cortex-A9 probe (tests/codegen/intref/test_lstm_int.py, run under qemu-system-arm): the generated
 * model's encoder on the samples of probe_data.h; prints "R z_0 ... z_{H-1}" per sample, then END.
 */
#include <stdint.h>

#include "fw_uart.h"
#include "fw_probe_print.h"
#include "kws_model.h"
#include "probe_data.h"

int main(void);

static int16_t z[KWS_HIDDEN_SIZE];

int main(void)
{
    uint32_t i, j;
    fw_uart_init();
    for (i = 0; i < PROBE_N; ++i) {
        kws_model_encode(probe_x + i * KWS_FEATURE_COUNT, z);
        fw_uart_putc('R');
        fw_uart_putc(' ');
        for (j = 0; j < KWS_HIDDEN_SIZE; ++j) {
            put_s(z[j]);
        }
        fw_uart_putc('\n');
    }
    fw_uart_write((const uint8_t *)"END\n", 4u);
    fw_uart_flush();
    for (;;) {
    }
}
